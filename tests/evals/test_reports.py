"""The three report forms (terminal, JSON, HTML) and compare: a seeded
regression is found, the HTML escapes a hostile conversation."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tests.evals.agents import QaModel, qa_agent

from prism.evals import (
    Case,
    CaseRun,
    Equals,
    EvalError,
    EvalReport,
    EvaluatorResult,
    Pricing,
    compare_reports,
    format_report,
    print_report,
    read_report,
    render_html,
    run_eval,
    write_html,
)

pytestmark = pytest.mark.anyio

CASES = [
    Case("france", "Capital of France?", expected="Paris"),
    Case("japan", "Capital of Japan?", expected="The capital is Tokyo."),
    Case("weather", "weather in Oslo", expected="Weather: sunny in Oslo"),
]


async def _report(model: QaModel | None = None, *, name: str = "qa") -> EvalReport:
    return await run_eval(
        CASES,
        qa_agent(model),
        evaluators=[Equals()],
        repeats=2,
        pricing=Pricing(3.0, 15.0),
        name=name,
    )


async def test_json_round_trips_and_compare_finds_a_seeded_regression(tmp_path: Path) -> None:
    good = await _report(name="good")
    bad = await _report(QaModel(wrong=frozenset({"france"})), name="bad")
    good.write_json(tmp_path / "a.json")
    bad.write_json(tmp_path / "b.json")
    base, head = read_report(tmp_path / "a.json"), read_report(tmp_path / "b.json")
    assert base.to_json() == good.to_json()
    assert head.case_pass_rates() == {"france": 0.0, "japan": 1.0, "weather": 1.0}

    comparison = compare_reports(base, head)
    assert [(c.case, c.before, c.after, c.evaluators) for c in comparison.regressions] == [
        ("france", 1.0, 0.0, ("equals",))
    ]
    assert comparison.improvements == () and comparison.unchanged == 2
    assert "  - france: 100% -> 0% (equals)" in comparison.format()
    back = compare_reports(head, base)
    assert [c.case for c in back.improvements] == ["france"] and not back.regressed


async def test_compare_lists_added_and_removed_cases() -> None:
    base = await run_eval(CASES[:2], qa_agent(), evaluators=[Equals()])
    head = await run_eval(CASES[1:], qa_agent(), evaluators=[Equals()])
    comparison = compare_reports(base, head)
    assert (comparison.added, comparison.removed) == (("weather",), ("france",))
    assert comparison.to_json()["added"] == ["weather"]


def test_a_file_that_is_not_a_report_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalError, match=r"r\.json: cannot read the eval report"):
        read_report(path)
    path.write_text(json.dumps({"version": 99}), encoding="utf-8")
    with pytest.raises(EvalError, match=r"r\.json: not a prism eval report"):
        read_report(path)
    path.write_text(json.dumps({"version": 1, "name": "x", "runs": [{"case": "a"}]}))
    with pytest.raises(EvalError, match=r"r\.json: a malformed eval report: KeyError"):
        read_report(path)


async def test_the_terminal_table_shows_cases_evaluators_and_sessions() -> None:
    report = await _report(QaModel(wrong=frozenset({"france"})))
    report.store = "out/sessions.sqlite"
    out = io.StringIO()
    print_report(report, file=out, width=200)
    text = out.getvalue()
    assert "france" in text and "0/2" in text and "2/2" in text
    assert "expected 'Paris', got 'Lyon'" in text
    assert "evaluators: equals 67%" in text
    assert "prism inspect out/sessions.sqlite" in text
    plain = format_report(report)
    assert plain.splitlines()[0].split()[:2] == ["fail", "0/2"]


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _hostile_report() -> EvalReport:
    run = CaseRun(
        case="evil",
        repeat=0,
        status="fail",
        session_id="s</code><script>",
        input=HOSTILE,
        expected=HOSTILE,
        output=HOSTILE,
        cost=0.001,
        evaluators=[
            EvaluatorResult(HOSTILE, "fail", HOSTILE, details={"verdict": HOSTILE}),
        ],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": HOSTILE}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_call", "id": "c", "name": HOSTILE, "arguments": {"q": HOSTILE}}
                ],
            },
            {"role": HOSTILE, "content": HOSTILE},
        ],
    )
    return EvalReport(name=HOSTILE, runs=[run], config={"model": {"model": HOSTILE}})


class _Tags(HTMLParser):
    """Every tag name, and any attribute that would load something."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.fetching: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.fetching += [(k, v) for k, v in attrs if k in {"src", "href", "onerror", "onload"}]


def test_the_html_report_escapes_everything_and_fetches_nothing(tmp_path: Path) -> None:
    page = render_html(_hostile_report())
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    tags = _Tags()
    tags.feed(page)
    assert not tags.fetching and "script" not in tags.names and "img" not in tags.names
    assert "default-src 'none'" in page
    write_html(_hostile_report(), tmp_path / "report.html")
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == page


async def test_the_html_report_plots_and_drills_down(tmp_path: Path) -> None:
    report = await _report(QaModel(wrong=frozenset({"france"})))
    page = render_html(report)
    assert page.count("<svg") == 3  # pass rate per evaluator, latency, cost
    assert 'aria-label="pass rate per evaluator"' in page
    assert "failing runs (2)" in page and "passing runs (4)" in page
    assert "call weather({&quot;city&quot;: &quot;Oslo&quot;})" in page
    assert "result of weather: sunny in Oslo" in page
