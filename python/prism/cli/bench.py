"""``prism bench attention [ARGS...]``: run the attention benchmark.

The benchmark lives in the source tree (``benches/attention``, run as
``python -m benches.attention``), not in the installed package, so this
subcommand works from a source checkout (an editable install) and says so
otherwise. ARGS are passed through unchanged (``--runs``, ``--long-runs``,
``--seed``, ``--fixtures``, ``--out``, ``--no-plot``; see ``prism bench
attention --help``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

BENCHMARKS = {"attention": "benches.attention"}
USAGE = (
    "usage: prism bench attention [--runs N] [--long-runs N] [--seed N] "
    "[--fixtures a,a150,b,c] [--out DIR] [--no-plot]"
)
# What each benchmark measures, in the words its output uses.
WHAT = {
    "attention": (
        "Runs scripted long coding sessions (seeded, mock provider, no network) with the"
        " attention compiler off, at its defaults and proactive, next to two peer"
        " strategies and a brute-force optimum, and reports input tokens, cache reads and"
        " writes, and cost per variant against the compiler's promised figures"
        " (docs/attention.md)."
    )
}


def source_root() -> Path | None:
    """The checkout this package was installed from, if it has benches/."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "benches" / "attention" / "__main__.py").is_file():
            return parent
    return None


def _error(message: str) -> int:
    sys.stderr.write(f"prism: error: {message}\n")
    return 2


def bench_main(args: Sequence[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        if args:
            sys.stdout.write(USAGE + "\n\n" + WHAT["attention"] + "\n")
            return 0
        return _error(f"bench needs a benchmark name ({', '.join(BENCHMARKS)})")
    name, rest = args[0], list(args[1:])
    module = BENCHMARKS.get(name)
    if module is None:
        return _error(f"unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
    root = source_root()
    if root is None:
        return _error(
            "prism bench attention runs from a source checkout (git clone, then make install):"
            " the benchmark's fixtures and peers live in benches/attention, which a wheel"
            " does not ship"
        )
    # A child interpreter keeps the benchmark's imports (matplotlib, rich)
    # and its working directory out of this process.
    completed = subprocess.run([sys.executable, "-m", module, *rest], cwd=root, check=False)
    return completed.returncode
