"""``prism bench attention``: Prism's attention scenario, from an installed wheel.

    prism bench attention [--turns N] [--seed N] [--json]

One seeded coding session of ``--turns`` turns (60 by default) is sent
through a real agent once per variant (the attention compiler off,
compaction alone, the gate under each policy); the report says in plain
words what each column measures. ``--json`` prints the summary document
instead (the same numbers for the same turns and seed). The scenario ships
in the package (``prism._bench``); the full benchmark, with peer frameworks
and the hindsight optimum, stays in the source tree as ``python -m
benches.attention``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

import anyio

from prism.cli.options import UsageProblem

BENCHMARKS = ("attention",)
DEFAULT_TURNS = 60
# Each turn's request carries the whole history when nothing is reduced, so
# the compiler-off rows grow quadratically: 1,000 turns is hours already.
MAX_TURNS = 1_000
WHAT = (
    "Sends one seeded coding session (scripted model, no network) through a real Prism agent"
    " once per variant: the attention compiler off, compaction alone, and the gate under each"
    " policy. Reports the input tokens sent, the share a prompt cache could read back, the"
    " cache-aware input cost with its per-turn median and 95th percentile, and the cache"
    " busts, with what each column means. The full benchmark (peer strategies, the"
    " hindsight optimum) runs from a source checkout: python -m benches.attention."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageProblem(f"bench attention: {message}")


def _turns(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_TURNS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_TURNS}, got {value}")
    return value


def _parser() -> _Parser:
    parser = _Parser(
        prog="prism bench attention", description=WHAT, add_help=True, allow_abbrev=False
    )
    parser.add_argument(
        "--turns",
        type=_turns,
        default=DEFAULT_TURNS,
        metavar="N",
        help=f"turns in the session (default {DEFAULT_TURNS}, at most {MAX_TURNS})",
    )
    parser.add_argument(
        "--seed", type=int, default=7, metavar="N", help="the session's seed (default 7)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the summary as one JSON document"
    )
    return parser


def bench_main(args: Sequence[str]) -> int:
    """``prism bench NAME [ARGS...]``; usage problems raise UsageProblem
    (one line on stderr, exit 2)."""
    if not args or args[0] in ("-h", "--help"):
        if args:
            _parser().print_help(sys.stdout)
            return 0
        raise UsageProblem(f"bench needs a benchmark name ({', '.join(BENCHMARKS)})")
    name = args[0]
    if name not in BENCHMARKS:
        raise UsageProblem(f"unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
    parsed = _parser().parse_args(list(args[1:]))
    return _run_attention(parsed.turns, parsed.seed, as_json=parsed.json)


def _run_attention(turns: int, seed: int, *, as_json: bool) -> int:
    from prism._bench.attention.runner import Variant, run_scenario
    from prism._bench.attention.scenario import VariantResult
    from prism._bench.attention.terminal import write_report

    started = time.perf_counter()
    progress = sys.stderr is not None and sys.stderr.isatty()

    def on_variant(variant: Variant, result: VariantResult) -> None:
        if progress:
            elapsed = time.perf_counter() - started
            sys.stderr.write(
                f"  {variant.name}: {len(result.input_tokens)} requests ({elapsed:.0f} s)\n"
            )

    doc = anyio.run(lambda: run_scenario(turns, seed, on_variant=on_variant))
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        write_report(doc, sys.stdout)
    return 0
