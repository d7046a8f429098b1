"""The ``prism bench attention`` summary and report (prism._bench.attention):
per-turn costs, the nearest-rank percentiles, and a report that says what
each column measures, with rich and without it."""

from __future__ import annotations

import copy
import io
from typing import Any

import anyio
import pytest

from prism._bench.attention.runner import MEASURES, VARIANTS, percentile, run_scenario
from prism._bench.attention.scenario import CACHE_READ, CACHE_WRITE, VariantResult
from prism._bench.attention.terminal import COLUMNS, plain_report, write_report


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return anyio.run(run_scenario, 2, 7)


def test_percentile_is_a_value_that_happened() -> None:
    values = [float(v) for v in range(20, 0, -1)]
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile(values, 100) == 20.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


def test_turn_costs_sum_each_runs_requests() -> None:
    result = VariantResult("x")
    result.cache_read = [0, 100, 300, 0]
    result.cache_write = [100, 50, 20, 400]
    result.run_ends = [2, 3]  # the fourth request's run never finished
    costs = result.request_costs()
    assert result.turn_costs() == [costs[0] + costs[1], costs[2]]
    assert costs[1] == 100 * CACHE_READ + 50 * CACHE_WRITE


def test_the_summary_adds_up(doc: dict[str, Any]) -> None:
    off = doc["variants"][0]
    assert doc["measures"] == MEASURES and doc["baseline"] == "off"
    assert off["costVsOff"] == 1.0
    assert off["inputTokens"] == off["cacheReadTokens"] + off["cacheWriteTokens"]
    assert off["cacheReadShare"] == round(off["cacheReadTokens"] / off["inputTokens"], 4)
    assert off["cost"] == round(
        off["cacheReadTokens"] * CACHE_READ + off["cacheWriteTokens"] * CACHE_WRITE
    )
    assert 0 < off["turnCost"]["p50"] <= off["turnCost"]["p95"] <= off["turnCost"]["max"]


def test_run_scenario_refuses_an_empty_session() -> None:
    with pytest.raises(ValueError, match="turns must be at least 1, got 0"):
        anyio.run(run_scenario, 0, 7)


def _check_report(text: str, doc: dict[str, Any]) -> None:
    assert "What the columns mean" in text and "Variants:" in text
    for name, _ in COLUMNS:
        assert f"{name}:" in text
    for variant in VARIANTS:
        # Descriptions may wrap; their first words stay on one line.
        assert " ".join(variant.description.split()[:4]) in text
    assert "python -m benches.attention" in text
    assert "issue" not in text.lower()


def test_plain_report_fits_100_columns_and_explains_itself(doc: dict[str, Any]) -> None:
    text = plain_report(doc)
    _check_report(text, doc)
    assert max(len(line) for line in text.splitlines()) <= 100
    # A short session never reaches the trigger, and the report says why.
    assert "never grew past the gate's trigger" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("off ", "default "))]
    assert rows[0][1] == f"{doc['variants'][0]['inputTokens']:,}"


def test_rich_report_has_the_same_content(doc: dict[str, Any]) -> None:
    pytest.importorskip("rich")
    out = io.StringIO()
    write_report(doc, out, use_rich=True)
    _check_report(out.getvalue(), doc)
    assert f"{doc['variants'][0]['cost']:,}" in out.getvalue()


def test_a_session_the_gate_acted_on_is_read_differently(doc: dict[str, Any]) -> None:
    acted = copy.deepcopy(doc)
    acted["variants"][-1]["gateTrips"] = 1
    acted["variants"][-1]["error"] = "AttentionBudgetError: over the cap"
    text = plain_report(acted)
    assert "never grew past" not in text and "How to read it" in text
    assert "proactive stopped early: AttentionBudgetError: over the cap" in text
