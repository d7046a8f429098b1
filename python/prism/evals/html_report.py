"""The HTML report: one self-contained file (no script, no network: a
Content-Security-Policy forbids both) with inline SVG plots of the pass
rate per evaluator and the latency and cost distributions, then one
drill-down per run showing its evaluators and its conversation.

Everything from a run (inputs, outputs, tool arguments, judge verdicts,
case names) is untrusted text and goes through ``html.escape``.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prism.evals.report import CaseRun, EvalReport

__all__ = ["render_html", "write_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
.pass{color:#137333}.fail{color:#c5221f}.error{color:#b06000}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top}
tr:nth-child(even){background:#f6f6f6}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f3f3;padding:6px;margin:2px 0}
.msg{border-left:3px solid #ccc;padding-left:8px;margin:6px 0}
.role-user{border-color:#1a73e8}.role-assistant{border-color:#137333}.role-tool{border-color:#b06000}
.plots{display:flex;gap:2em;flex-wrap:wrap}
details{margin:4px 0}summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(text, quote=True)


def _bars(title: str, values: Mapping[str, float]) -> str:
    """Horizontal bars, one per label, for rates in [0, 1]."""
    row, label_w, bar_w = 22, 160, 240
    height = row * len(values) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 60}" '
        f'height="{height}" role="img" aria-label="{_e(title)}">',
        f'<text x="0" y="14" font-weight="bold">{_e(title)}</text>',
    ]
    for i, (label, rate) in enumerate(values.items()):
        y = 24 + i * row
        width = round(bar_w * rate, 1)
        color = "#137333" if rate >= 1 else "#c5221f" if rate < 0.5 else "#b06000"
        parts += [
            f'<text x="0" y="{y + 14}">{_e(label[:24])}</text>',
            f'<rect x="{label_w}" y="{y}" width="{bar_w}" height="16" fill="#eee"/>',
            f'<rect x="{label_w}" y="{y}" width="{width}" height="16" fill="{color}"/>',
            f'<text x="{label_w + bar_w + 6}" y="{y + 14}">{rate:.0%}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def _histogram(title: str, values: Sequence[float], unit: str, bins: int = 10) -> str:
    """A histogram of ``values`` in ``bins`` equal-width bins."""
    width, height, top = 360, 140, 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" '
        f'role="img" aria-label="{_e(title)}">',
        f'<text x="0" y="14" font-weight="bold">{_e(title)}</text>',
    ]
    if not values:
        parts.append('<text x="0" y="40">no data</text></svg>')
        return "".join(parts)
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / span * bins), bins - 1)] += 1
    peak = max(counts)
    bar = width / bins
    for i, count in enumerate(counts):
        h = round((height - top) * count / peak, 1)
        parts.append(
            f'<rect x="{i * bar + 1:.1f}" y="{height - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h}" fill="#1a73e8"><title>{count}</title></rect>'
        )
    parts += [
        f'<text x="0" y="{height + 16}">{low:.4g} {_e(unit)}</text>',
        f'<text x="{width}" y="{height + 16}" text-anchor="end">{high:.4g} {_e(unit)}</text>',
        "</svg>",
    ]
    return "".join(parts)


def _block(block: Any) -> str:
    if not isinstance(block, Mapping):
        return f"<pre>{_e(block)}</pre>"
    kind = block.get("type")
    if kind == "text":
        return f"<pre>{_e(block.get('text', ''))}</pre>"
    if kind == "tool_call":
        args = _e(block.get("arguments", {}))
        return f"<pre>call {_e(block.get('name', ''))}({args})</pre>"
    if kind == "tool_result":
        return f"<pre>result of {_e(block.get('name', ''))}: {_e(block.get('result'))}</pre>"
    return f"<pre>{_e(block)}</pre>"


def _conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    out = []
    for message in messages:
        role = str(message.get("role", "?"))
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        body = "".join(_block(b) for b in blocks)
        out.append(f'<div class="msg role-{_e(role)}"><b>{_e(role)}</b>{body}</div>')
    return "".join(out) or "<p>(no messages)</p>"


def _evaluator_rows(run: CaseRun) -> str:
    rows = []
    for result in run.evaluators:
        extra = "".join(
            f"<details><summary>{_e(key)}</summary><pre>{_e(value)}</pre></details>"
            for key, value in result.details.items()
        )
        score = "" if result.score is None else f"{result.score:g}"
        rows.append(
            f'<tr><td>{_e(result.name)}</td><td class="{_e(result.status)}">'
            f"{_e(result.status)}</td><td>{score}</td><td>{_e(result.reason)}{extra}</td></tr>"
        )
    return "<table>" + "".join(rows) + "</table>" if rows else ""


def _case_table(report: EvalReport) -> str:
    rows = []
    for case, rate in report.case_pass_rates().items():
        runs = [r for r in report.runs if r.case == case]
        passed = sum(1 for r in runs if r.status == "pass")
        status = (
            "pass" if rate >= 1 else "error" if any(r.status == "error" for r in runs) else "fail"
        )
        rows.append(
            f'<tr><td>{_e(case)}</td><td class="{status}">{passed}/{len(runs)}</td>'
            f"<td>{_e(runs[0].source or '')}</td></tr>"
        )
    head = "<tr><th>case</th><th>passed</th><th>from</th></tr>"
    return f"<h2>cases</h2><table>{head}{''.join(rows)}</table>"


def _run_section(run: CaseRun, *, open_: bool = False) -> str:
    cost = "" if run.cost is None else f", cost {run.cost:.6f}"
    head = (
        f'<summary><span class="{_e(run.status)}">{_e(run.status)}</span> '
        f"{_e(run.case)} #{run.repeat} ({run.latency_s * 1000:.0f} ms{cost})</summary>"
    )
    parts = [
        f"<p>session <code>{_e(run.session_id or '')}</code>, attempts {run.attempts}"
        + (f", from <code>{_e(run.source)}</code>" if run.source else "")
        + "</p>",
    ]
    if run.error:
        parts.append(f'<p class="error">error: {_e(run.error)}</p>')
    if run.expected is not None:
        parts.append(f"<p>expected</p><pre>{_e(run.expected)}</pre>")
    parts += [_evaluator_rows(run), "<h3>conversation</h3>", _conversation(run.messages)]
    return f"<details{' open' if open_ else ''}>{head}{''.join(parts)}</details>"


def render_html(report: EvalReport) -> str:
    """The whole report as one HTML document."""
    counts = report.counts()
    latencies = [r.latency_s * 1000 for r in report.runs]
    costs = [r.cost for r in report.runs if r.cost is not None]
    plots = [
        _bars("pass rate per evaluator", report.evaluator_pass_rates()),
        _histogram("latency", latencies, "ms"),
    ]
    if costs:
        plots.append(_histogram("cost", costs, "$"))
    problems = "".join(f"<li>{_e(str(p))}</li>" for p in report.problems)
    failing = [r for r in report.runs if r.status != "pass"]
    passing = [r for r in report.runs if r.status == "pass"]
    model = report.config.get("model", {})
    return "".join(
        [
            '<!doctype html><html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            f"<title>eval {_e(report.name)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>eval {_e(report.name)}</h1>",
            f"<p><b>{report.pass_rate:.1%}</b> passed: {counts['pass']} pass, "
            f"{counts['fail']} fail, {counts['error']} error over {len(report.runs)} runs; "
            f"model {_e(model.get('model', '?'))}; started {_e(report.started_at)}; "
            f"{report.duration_s:.2f}s</p>",
            f'<div class="plots">{"".join(plots)}</div>',
            f"<h2>rows left out</h2><ul>{problems}</ul>" if problems else "",
            _case_table(report),
            f"<h2>failing runs ({len(failing)})</h2>",
            "".join(_run_section(r, open_=i == 0) for i, r in enumerate(failing)),
            f"<h2>passing runs ({len(passing)})</h2>",
            "".join(_run_section(r) for r in passing),
            "</body></html>",
        ]
    )


def write_html(report: EvalReport, path: str | os.PathLike[str]) -> None:
    """Write ``render_html(report)`` atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(render_html(report), encoding="utf-8")
    os.replace(partial, target)
