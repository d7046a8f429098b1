"""The ``prism bench attention`` report: a table of the summary that
:func:`prism._bench.attention.runner.run_scenario` returns, with what each
column measures and how to read it, in plain words.

The table is drawn with rich when it is installed (the ``evals`` and
``bench`` extras bring it) and as aligned plain text otherwise, so the
command needs nothing beyond the runtime's dependencies.
"""

from __future__ import annotations

import importlib.util
import textwrap
from collections.abc import Mapping
from typing import Any, TextIO

__all__ = ["COLUMNS", "change", "plain_report", "report_lines", "table_rows", "write_report"]

WIDTH = 100
COLUMNS: tuple[tuple[str, str], ...] = (
    ("variant", "how the session ran (listed under the table)"),
    ("input tokens", "every input token sent over the session (Prism's native estimate)"),
    (
        "cache reads",
        "the share of those tokens a prompt cache could read back because the request began"
        " with the previous request unchanged; higher is better",
    ),
    (
        "cost",
        "the input cost in units of one uncached input token, with a prompt cache that keeps"
        " the previous request: the shared beginning is read at {read}x, the rest written at"
        " {write}x; lower is better",
    ),
    ("cost vs off", "the cost against the first row, where nothing is reduced"),
    (
        "per turn p50 / p95",
        "the median and the 95th-percentile cost of one turn (a user message and the requests"
        " it caused); p95 shows the expensive turns, where a request was rewritten",
    ),
    (
        "cache busts",
        "requests that did not begin with the previous request, so the cache was written"
        " again from the first changed message",
    ),
    ("compactions", "times compaction replaced the history with a summary"),
)
"""Each column of the table and what it measures."""
# Two header lines, so the table fits 100 columns.
_HEADERS = (
    ("", "variant"),
    ("input", "tokens"),
    ("cache", "reads"),
    ("", "cost"),
    ("cost", "vs off"),
    ("per turn", "p50"),
    ("per turn", "p95"),
    ("cache", "busts"),
    ("", "compactions"),
)
FULL_BENCHMARK = (
    "The full benchmark (two peer strategies, the hindsight-optimal schedule and three more"
    " sessions) runs from a source checkout: python -m benches.attention (docs/attention.md)."
)


def change(value: float, base: float, fewer: str, more: str) -> str:
    """``value`` against ``base`` in words whose sign reads right:
    "62.5% fewer" / "124.1% more" (never a negative "less")."""
    if base == 0:
        return "-"
    pct = 100 * (value - base) / base
    if abs(pct) < 0.05:
        return "same"
    return f"{abs(pct):.1f}% {more if pct > 0 else fewer}"


def table_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """One row of cells per variant, in the order of the table's columns."""
    variants = doc["variants"]
    base = variants[0]["cost"] if variants else 0
    rows = []
    for index, v in enumerate(variants):
        rows.append(
            [
                v["name"],
                f"{v['inputTokens']:,}",
                f"{100 * v['cacheReadShare']:.1f}%",
                f"{v['cost']:,}",
                "-" if index == 0 else change(v["cost"], base, "less", "more"),
                f"{v['turnCost']['p50']:,}",
                f"{v['turnCost']['p95']:,}",
                str(v["cacheBusts"]),
                str(v["compactions"]),
            ]
        )
    return rows


def _intro(doc: Mapping[str, Any]) -> list[str]:
    model = doc["model"]
    return [
        f"Attention benchmark: a {doc['turns']}-turn coding session (seed {doc['seed']}),"
        " sent through a real Prism agent once per variant.",
        f"Each turn: a user message, the model thinks and calls a tool that returns 1-40 KB,"
        f" then answers. Scripted model with a {model['contextWindow']:,}-token window, no"
        f" network; input cap {model['inputCap']:,} tokens, the gate trips above"
        f" {model['gateTrigger']:,}.",
    ]


def _reading(doc: Mapping[str, Any]) -> list[str]:
    pricing = doc["pricing"]
    lines = ["What the columns mean:"]
    for name, what in COLUMNS:
        lines.append(
            f"  {name}: {what.format(read=pricing['cacheRead'], write=pricing['cacheWrite'])}."
        )
    lines.append("Variants:")
    lines += [f"  {v['name']}: {v['description']}." for v in doc["variants"]]
    lines += [f"  {v['name']} stopped early: {v['error']}" for v in doc["variants"] if v["error"]]
    untouched = all(v["gateTrips"] == 0 and v["compactions"] == 0 for v in doc["variants"])
    if untouched:
        lines.append(
            "Every row is the same because the session never grew past the gate's trigger:"
            " nothing was reduced. Run more turns (the documented session has 60)."
        )
    else:
        lines.append(
            "How to read it: a row that costs less than off with a high cache-read share and few"
            " cache busts saves money without making the provider re-read the history; the"
            " gap between p50 and p95 is what the turns that rewrite the request cost."
        )
    lines.append(FULL_BENCHMARK)
    return lines


def report_lines(doc: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The paragraphs before the table and the ones after it."""
    return _intro(doc), _reading(doc)


def plain_report(doc: Mapping[str, Any]) -> str:
    """The whole report as aligned plain text, at most 100 columns wide."""
    heads = [[top for top, _ in _HEADERS], [bottom for _, bottom in _HEADERS]]
    rows = table_rows(doc)
    widths = [max(len(row[i]) for row in [*heads, *rows]) for i in range(len(_HEADERS))]
    table = []
    for row in [*heads, *rows]:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        table.append("  ".join(cells).rstrip())
        if len(table) == len(heads):
            table.append("  ".join("-" * w for w in widths))
    before, after = report_lines(doc)
    wrapped = [_wrap(line, WIDTH) for line in before], [_wrap(line, WIDTH) for line in after]
    return "\n".join([*wrapped[0], "", *table, "", *wrapped[1]]) + "\n"


def _wrap(line: str, width: int) -> str:
    """``line`` folded to ``width``; an indented item hangs under its name."""
    indent = " " * (len(line) - len(line.lstrip()))
    return textwrap.fill(line, width, subsequent_indent=indent * 2)


def _rich_report(doc: Mapping[str, Any], file: TextIO) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    probe = Console(file=file)
    # Piped output has no width of its own; rich would assume 80 columns.
    console = probe if probe.is_terminal else Console(file=file, width=WIDTH)
    table = Table(box=box.SIMPLE_HEAD)
    for index, (top, bottom) in enumerate(_HEADERS):
        header = f"{top}\n{bottom}" if top else bottom
        table.add_column(header, justify="left" if index == 0 else "right", no_wrap=True)
    for row in table_rows(doc):
        table.add_row(*row)
    before, after = report_lines(doc)
    for line in before:
        console.print(Text(_wrap(line, console.width)))
    console.print(table)
    for line in after:
        console.print(Text(_wrap(line, console.width)))


def write_report(doc: Mapping[str, Any], file: TextIO, *, use_rich: bool | None = None) -> None:
    """Write the report to ``file``: with rich when ``use_rich`` is true, or
    is None and rich is installed; as plain text otherwise."""
    if use_rich is None:
        use_rich = importlib.util.find_spec("rich") is not None
    if use_rich:
        _rich_report(doc, file)
    else:
        file.write(plain_report(doc))
