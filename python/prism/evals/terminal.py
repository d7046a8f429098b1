"""The terminal report: one row per case (pass rate over its repeats,
latency, cost, why it failed), then the pass rate per evaluator and the
dataset rows left out. Drawn with rich (the ``evals`` extra); without rich
the same content is printed as plain lines."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import IO, Any

from prism.evals.report import CaseRun, EvalReport

__all__ = ["format_report", "print_report"]


def _why(runs: list[CaseRun]) -> str:
    for run in runs:
        if run.status == "pass":
            continue
        if run.error:
            return run.error
        bad = [e for e in run.evaluators if e.status != "pass"]
        return "; ".join(f"{e.name}: {e.reason}" for e in bad)
    return ""


def _rows(report: EvalReport) -> list[tuple[str, str, str, str, str, str]]:
    by_case: dict[str, list[CaseRun]] = defaultdict(list)
    for run in report.runs:
        by_case[run.case].append(run)
    rows = []
    for case, runs in by_case.items():
        passed = sum(1 for r in runs if r.status == "pass")
        worst = "error" if any(r.status == "error" for r in runs) else "fail"
        status = "pass" if passed == len(runs) else worst
        latency = statistics.median(r.latency_s for r in runs) * 1000
        costs = [r.cost for r in runs if r.cost is not None]
        cost = f"{sum(costs) / len(costs):.6f}" if costs else "-"
        why = _why(runs)
        rows.append((case, status, f"{passed}/{len(runs)}", f"{latency:.0f} ms", cost, why))
    return rows


def _footer(report: EvalReport) -> list[str]:
    counts = report.counts()
    lines = [
        f"{report.name}: {report.pass_rate:.1%} passed "
        f"({counts['pass']} pass, {counts['fail']} fail, {counts['error']} error; "
        f"{report.duration_s:.2f}s)"
    ]
    rates = report.evaluator_pass_rates()
    if rates:
        lines.append("evaluators: " + ", ".join(f"{k} {v:.0%}" for k, v in rates.items()))
    lines += [f"left out: {problem}" for problem in report.problems]
    if report.store:
        lines.append(f"sessions: prism inspect {report.store} --session <sessionId>")
    return lines


def format_report(report: EvalReport) -> str:
    """The report as plain text (what ``print_report`` shows without rich)."""
    lines = [
        f"{status:5}  {rate:>5}  {latency:>8}  {cost:>9}  {case}  {why}".rstrip()
        for case, status, rate, latency, cost, why in _rows(report)
    ]
    return "\n".join([*lines, *_footer(report)])


_STYLE = {"pass": "green", "fail": "red", "error": "yellow"}


def print_report(
    report: EvalReport, *, file: IO[str] | None = None, width: int | None = None
) -> None:
    """Print the report as a rich table (plain lines when rich is missing);
    ``width`` overrides the terminal's (or rich's 80 off a terminal)."""
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        print(format_report(report), file=file)
        return
    console: Any = Console(file=file, highlight=False, soft_wrap=False, width=width)
    table = Table(title=f"eval {escape(report.name)}", title_justify="left")
    for column, justify in [
        ("case", "left"),
        ("status", "left"),
        ("passed", "right"),
        ("latency", "right"),
        ("cost", "right"),
        ("why", "left"),
    ]:
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for case, status, rate, latency, cost, why in _rows(report):
        styled = f"[{_STYLE[status]}]{status}[/]"
        table.add_row(escape(case), styled, rate, latency, cost, escape(why[:200]))
    console.print(table)
    for line in _footer(report):
        console.print(escape(line))
