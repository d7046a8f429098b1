"""Benchmarks that ship in the wheel, run by ``prism bench NAME``.

Private on purpose: what a user relies on is the command and its ``--json``
document (docs/cli.md), not these Python names, so the scenario can change
(a new variant, a different fixture) without a deprecation cycle. The
source tree's ``benches/`` imports them and adds what needs the ``bench``
extra (peer frameworks, numpy for the hindsight optimum, matplotlib).
"""
