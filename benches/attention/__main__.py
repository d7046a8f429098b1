"""``python -m benches.attention``: compiler off / on / on with hysteresis
through a real session on the seeded coding fixture; writes a JSON result
and a PNG of the per-request input-token curves.

    python -m benches.attention [--runs 60] [--seed 7] [--out benches/attention/results]
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
from benches.attention.scenario import MODEL, VariantResult, fixture_turns, run_variant

from prism.attention import resolve_input_cap


def variants(target: float) -> list[tuple[str, Any]]:
    return [("off", None), ("on", True), ("on+hysteresis", {"targetRatio": target})]


def plot(results: list[VariantResult], cap: int, target: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5))
    for r in results:
        ax.plot(r.input_tokens, label=f"{r.name} (total {r.total:,})", linewidth=1.4)
        busts = [i for i, b in enumerate(r.busts) if b]
        ax.scatter(busts, [r.input_tokens[i] for i in busts], s=14, marker="x")
    ax.axhline(MODEL["limits"]["contextWindow"], color="grey", linestyle=":", label="window")
    ax.axhline(0.75 * cap, color="red", linestyle="--", linewidth=0.8, label="trigger 0.75×cap")
    ax.axhline(target * cap, color="orange", linestyle="--", linewidth=0.8, label="target")
    ax.set_xlabel("provider request (2 per run)")
    ax.set_ylabel("estimated input tokens")
    ax.set_title("Attention compiler: per-request input tokens (x = cache bust)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    console = Console()
    turns = fixture_turns(args.seed, args.runs)
    cap = resolve_input_cap(None, MODEL)
    results: list[VariantResult] = []
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), console=console
    ) as progress:
        for name, attention in variants(args.target):
            task = progress.add_task(name, total=len(turns))
            result = await run_variant(
                name, attention, turns, on_run=lambda t=task: progress.advance(t)
            )
            progress.update(task, completed=len(turns))
            results.append(result)
    elapsed = time.perf_counter() - started

    off = results[0]
    table = Table(title=f"attention benchmark: {args.runs} runs, seed {args.seed}, cap {cap:,}")
    for col in ("variant", "input tokens", "vs off", "peak", "busts", "cache-aware cost", "vs off"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r.name,
            f"{r.total:,}",
            f"{100 * (1 - r.total / off.total):.1f}% fewer" if r is not off else "-",
            f"{max(r.input_tokens):,}",
            str(sum(r.busts)),
            f"{r.cost:,.0f}",
            f"{100 * (1 - r.cost / off.cost):.1f}% less" if r is not off else "-",
        )
    console.print(table)
    over_window = [
        i for i, t in enumerate(off.input_tokens) if t > MODEL["limits"]["contextWindow"]
    ]
    summary = {
        "command": (
            f"python -m benches.attention --runs {args.runs} --seed {args.seed}"
            f" --target {args.target}"
        ),
        "targetRatio": args.target,
        "runs": args.runs,
        "seed": args.seed,
        "model": MODEL,
        "inputCap": cap,
        "pricing": {"cacheRead": 0.1, "cacheWrite": 1.25, "unit": "base input tokens"},
        "offRequestsOverWindow": len(over_window),
        "firstOffRequestOverWindow": over_window[0] if over_window else None,
        "seconds": round(elapsed, 2),
        "python": platform.python_version(),
        "variants": [r.to_json() for r in results],
        "savings": {
            r.name: {
                "inputTokensPct": round(100 * (1 - r.total / off.total), 1),
                "cacheAwareCostPct": round(100 * (1 - r.cost / off.cost), 1),
            }
            for r in results[1:]
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "attention.json").write_text(json.dumps(summary, indent=1) + "\n")
    written = [out / "attention.json"]
    if not args.no_plot:
        plot(results, cap, args.target, out / "attention.png")
        written.append(out / "attention.png")
    console.print(f"wrote {' and '.join(map(str, written))} ({elapsed:.1f}s)")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benches.attention", description=__doc__)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.5, help="hysteresis target_ratio")
    parser.add_argument("--out", default="benches/attention/results")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib)")
    args = parser.parse_args()
    # Fail before the run, not after minutes of work, when the plot cannot be drawn.
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(
            "the plot needs matplotlib: pip install 'prism-harness[bench]' or pass --no-plot"
        )
    anyio.run(main_async, args)


if __name__ == "__main__":
    main()
