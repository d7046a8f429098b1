"""``python -m benches.attention``: the attention compiler's policies, the
peers' strategies and the hindsight anchors on the same seeded fixtures, in
one process. Writes a JSON result and one PNG per fixture.

The fixtures, the scoring and Prism's variants ship in the package
(``prism._bench.attention``, what ``prism bench attention`` runs from a
wheel); this module adds what needs the ``bench`` extra or the source tree:
the peers (openai-agents), the hindsight optimum (numpy), the plots
(matplotlib) and the four-fixture report.

    python -m benches.attention [--runs 60] [--long-runs 150] [--seed 7]
                                [--fixtures a,a150,b,c] [--out DIR] [--no-plot]

Every Prism variant runs through a real ``AgentSession`` (mock provider)
with auto-compaction at ``input_ratio`` 0.9 (default strategy). ``off`` is
the compiler off and no compaction (the stream the peers and anchors are
computed on); ``off+compaction`` adds compaction alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import time
from pathlib import Path
from typing import Any

import anyio
from benches.attention.optimum import anchor_result, build_model, solve
from benches.attention.peers import peer_scorers
from benches.attention.report import markdown, plot, table, targets

from prism._bench.attention.fixtures import Fixture, fixtures
from prism._bench.attention.runner import TRIGGER_RATIO as TRIGGER
from prism._bench.attention.runner import VARIANTS
from prism._bench.attention.scenario import (
    CACHE_READ,
    CACHE_WRITE,
    MODEL,
    VariantResult,
    run_variant,
)
from prism.attention import resolve_input_cap

# The gate's variants (the package's list after its two compiler-off rows,
# which run_fixture runs itself with the peers watching the first).
PRISM_VARIANTS: list[tuple[str, Any]] = [(v.name, v.attention) for v in VARIANTS[2:]]


class StreamRecorder:
    """Keeps what the schedule model needs from the compiler-off stream: the
    rows of each request and the last request (each is a prefix of it)."""

    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.seed_length: int | None = None
        self.final: dict[str, Any] | None = None

    def seed(self, request: dict[str, Any]) -> None:
        self.seed_length = 1 + len(request["messages"])

    def feed(self, request: dict[str, Any]) -> None:
        self.lengths.append(1 + len(request["messages"]))
        self.final = request


async def run_fixture(
    fixture: Fixture, cap: int, log: Any
) -> tuple[list[VariantResult], dict[str, Any]]:
    started = time.perf_counter()
    recorder = StreamRecorder()
    peers = peer_scorers()
    off = await run_variant(
        fixture,
        VariantResult("off", kind="baseline"),
        None,
        compaction=False,
        observers=[*peers, recorder],
    )
    log(f"  off: {len(off.input_tokens)} requests")
    results = [off]
    baseline = VariantResult("off+compaction", kind="baseline")
    results.append(await run_variant(fixture, baseline, None, compaction=True))
    for name, attention in PRISM_VARIANTS:
        results.append(await run_variant(fixture, VariantResult(name), attention, compaction=True))
        log(f"  {name}: done")
    results += [p.result for p in peers]
    assert recorder.final is not None
    dp_started = time.perf_counter()
    model = build_model(recorder.final, recorder.lengths, seed_length=recorder.seed_length)
    _, best = solve(model, read=CACHE_READ, write=CACHE_WRITE, cap=cap)
    results.append(
        anchor_result(
            "optimum",
            model,
            best,
            "hindsight optimum over every sticky oldest-first schedule (dynamic programme)",
        )
    )
    _, gated = solve(model, read=CACHE_READ, write=CACHE_WRITE, cap=cap, trigger=TRIGGER * cap)
    results.append(
        anchor_result(
            "trigger-only",
            model,
            gated,
            f"best schedule that changes nothing under {TRIGGER} of the cap",
        )
    )
    timing = {
        "seconds": round(time.perf_counter() - started, 2),
        "dpSeconds": round(time.perf_counter() - dp_started, 2),
        "dpStates": model.states[0] * model.states[1],
    }
    return results, timing


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benches.attention", description=__doc__)
    parser.add_argument("--runs", type=int, default=60, help="runs of fixture (a)")
    parser.add_argument("--long-runs", type=int, default=150, help="runs of the long fixture (a)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fixtures", default="a,a150,b,c", help="comma-separated: a,a150,b,c")
    parser.add_argument("--out", default="benches/attention/results")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNGs (no matplotlib)")
    args = parser.parse_args()
    chosen = [f.strip() for f in args.fixtures.split(",") if f.strip()]
    unknown = sorted(set(chosen) - {"a", "a150", "b", "c"})
    if unknown or not chosen:
        parser.error(f"--fixtures takes a, a150, b and c; got {args.fixtures!r}")
    if args.runs < 1 or args.long_runs < 1:
        parser.error("--runs and --long-runs must be at least 1")
    # Fail before the run, not after minutes of work, when the plot cannot be drawn.
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(
            "the plots need matplotlib: pip install 'prism-harness[bench]' or pass --no-plot"
        )
    if importlib.util.find_spec("numpy") is None:
        parser.error("the optimum needs numpy: pip install 'prism-harness[bench]'")
    anyio.run(main_async, args, chosen)


async def main_async(args: argparse.Namespace, chosen: list[str]) -> None:
    cap = resolve_input_cap(None, MODEL)
    all_fixtures = fixtures(args.seed, args.runs, args.long_runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    by_fixture: dict[str, dict[str, VariantResult]] = {}
    summary_fixtures: dict[str, Any] = {}
    written: list[Path] = []
    started = time.perf_counter()
    for name in chosen:
        fixture = all_fixtures[name]
        print(f"{fixture.title}")
        results, timing = await run_fixture(fixture, cap, lambda line: None)
        named = {r.name: r for r in results}
        by_fixture[name] = named
        off, optimum = named["off"], named["optimum"]
        print(table(results, off, optimum))
        print()
        summary_fixtures[name] = {
            "title": fixture.title,
            "runs": len(fixture.turns),
            "preloadedMessages": len(fixture.preload),
            **timing,
            "variants": [r.to_json() for r in results],
            "markdown": markdown(results, off, optimum),
        }
        if not args.no_plot:
            path = out / f"attention-{name}.png"
            plot(results, fixture.title, cap, TRIGGER, path)
            written.append(path)
    checks = targets(by_fixture)
    print("targets (what the compiler promises on these sessions; docs/attention.md):")
    for check in checks:
        mark = "met" if check["met"] else "NOT met"
        print(
            f"  ({check['fixture']}) {check['what']}: {check['measured']} (target {check['target']}): {mark}"
        )
    primary = summary_fixtures[chosen[0]]
    summary = {
        "command": (
            f"python -m benches.attention --runs {args.runs} --long-runs {args.long_runs} "
            f"--seed {args.seed} --fixtures {','.join(chosen)}"
        ),
        "runs": args.runs,
        "seed": args.seed,
        "model": MODEL,
        "inputCap": cap,
        "pricing": {
            "cacheRead": CACHE_READ,
            "cacheWrite": CACHE_WRITE,
            "unit": "base input tokens",
        },
        "compaction": {"trigger": {"type": "input_ratio", "ratio": 0.9}, "strategy": "default"},
        "seconds": round(time.perf_counter() - started, 2),
        "python": platform.python_version(),
        # The first fixture's rows, in the shape earlier results had.
        "fixture": chosen[0],
        "variants": primary["variants"],
        "fixtures": summary_fixtures,
        "targets": checks,
    }
    (out / "attention.json").write_text(json.dumps(summary, indent=1) + "\n")
    written.insert(0, out / "attention.json")
    print(f"wrote {', '.join(map(str, written))} ({summary['seconds']:.1f}s)")


if __name__ == "__main__":
    main()
