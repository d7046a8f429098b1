"""The full benchmark's terminal table (fits 100 columns), its targets, and
plots (``change`` is the package report's, shared with ``prism bench
attention``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prism._bench.attention.scenario import WINDOW, VariantResult
from prism._bench.attention.terminal import change


def rows(
    results: list[VariantResult], off: VariantResult, optimum: VariantResult | None
) -> list[list[str]]:
    out = []
    for r in results:
        out.append(
            [
                r.name,
                f"{r.total:,}",
                "-" if r is off else change(r.total, off.total, "fewer", "more"),
                f"{max(r.input_tokens, default=0):,}",
                str(sum(r.busts)),
                f"{r.cost:,.0f}",
                "-" if r is off else change(r.cost, off.cost, "less", "more"),
                f"{r.cost / optimum.cost:.2f}x" if optimum is not None and optimum.cost else "-",
                str(r.over_window),
                str(r.compactions) if r.kind == "prism" or r.name.startswith("off+") else "-",
            ]
        )
    return out


HEADER = [
    "variant",
    "input tokens",
    "vs off",
    "peak",
    "busts",
    "cost",
    "cost vs off",
    "vs opt",
    "over",
    "cmp",
]


def table(results: list[VariantResult], off: VariantResult, optimum: VariantResult | None) -> str:
    body = rows(results, off, optimum)
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]
    lines = []
    for row in [HEADER, *body]:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append(" ".join(cells))
        if row is HEADER:
            lines.append(" ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(
    results: list[VariantResult], off: VariantResult, optimum: VariantResult | None
) -> str:
    body = rows(results, off, optimum)
    lines = ["| " + " | ".join(HEADER) + " |", "| --- |" + " ---: |" * (len(HEADER) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def _pct_fewer(r: VariantResult, off: VariantResult) -> float:
    return 100 * (1 - r.total / off.total)


def targets(by_fixture: dict[str, dict[str, VariantResult]]) -> list[dict[str, Any]]:
    """The compiler's promised figures, measured: each has ``target``,
    ``measured``, ``met``."""
    out: list[dict[str, Any]] = []

    def add(fixture: str, what: str, target: str, measured: str, met: bool) -> None:
        out.append(
            {"fixture": fixture, "what": what, "target": target, "measured": measured, "met": met}
        )

    a = by_fixture.get("a")
    if a:
        off, default, proactive, opt = a["off"], a["default"], a["proactive"], a["optimum"]
        ratio = default.cost / opt.cost
        add("a", "default cost vs optimum", "<= 1.60x", f"{ratio:.2f}x", ratio <= 1.6)
        fewer = _pct_fewer(default, off)
        add("a", "default input tokens vs off", ">= 50% fewer", f"{fewer:.1f}% fewer", fewer >= 50)
        trips = len(default.trip_requests)
        busts = sum(default.busts)
        add(
            "a",
            "default busts",
            "<= 4, <= 1 per trip",
            f"{busts} busts, {trips} trips",
            busts <= 4 and busts <= max(trips, 0),
        )
        peers = [r for r in a.values() if r.kind == "peer"]
        cheaper = all(default.cost < p.cost for p in peers)
        add(
            "a",
            "default cheaper than both peers",
            "yes",
            ", ".join(f"{p.name} {p.cost:,.0f}" for p in peers) + f" vs {default.cost:,.0f}",
            cheaper,
        )
        ratio = proactive.cost / opt.cost
        add("a", "proactive cost vs optimum", "<= 1.15x", f"{ratio:.2f}x", ratio <= 1.15)
        fewer = _pct_fewer(proactive, off)
        add(
            "a", "proactive input tokens vs off", ">= 75% fewer", f"{fewer:.1f}% fewer", fewer >= 75
        )
    b = by_fixture.get("b")
    if b:
        default, off = b["default"], b["off"]
        busts = [i for i, x in enumerate(default.busts) if x]
        trip = _first_trip_request(default)
        add(
            "b",
            "default busts",
            "exactly 1, on the trip turn",
            f"{len(busts)} at request(s) {busts}, trip at request {trip}",
            len(busts) == 1 and busts[0] == trip,
        )
        fewer = _pct_fewer(default, off)
        add("b", "default input tokens vs off", ">= 60% fewer", f"{fewer:.1f}% fewer", fewer >= 60)
    c = by_fixture.get("c")
    if c:
        default, off = c["default"], c["off"]
        add(
            "c",
            "default cost vs off",
            "no worse",
            change(default.cost, off.cost, "less", "more"),
            default.cost <= off.cost,
        )
    over = [
        f"{f}:{r.name}"
        for f, rs in by_fixture.items()
        for r in rs.values()
        if r.kind == "prism" and r.over_window
    ]
    add("all", "Prism requests over the window", "none", ", ".join(over) or "none", not over)
    return out


def _first_trip_request(result: VariantResult) -> int | None:
    return result.trip_requests[0] if result.trip_requests else None


def plot(results: list[VariantResult], title: str, cap: int, trigger: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.2))
    for r in results:
        if r.name.startswith("target") or r.name.startswith("off+"):
            continue  # fewer lines: the table has them
        style = "--" if r.kind == "anchor" else ":" if r.kind == "peer" else "-"
        ax.plot(r.input_tokens, style, label=f"{r.name} (cost {r.cost / 1e6:.2f}M)", linewidth=1.2)
        busts = [i for i, b in enumerate(r.busts) if b]
        ax.scatter(busts, [r.input_tokens[i] for i in busts], s=12, marker="x")
    ax.axhline(WINDOW, color="grey", linestyle=":", linewidth=0.8, label="window")
    ax.axhline(
        trigger * cap, color="red", linestyle="--", linewidth=0.6, label=f"trigger {trigger}×cap"
    )
    ax.set_xlabel("provider request")
    ax.set_ylabel("estimated input tokens")
    ax.set_title(f"{title} (x = cache bust)", fontsize=10)
    ax.legend(loc="upper left", fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
