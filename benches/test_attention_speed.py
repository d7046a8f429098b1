"""Attention pass speed on the ~900-message / ~5 MB coding fixture.

Run: .venv/bin/python -m pytest benches/test_attention_speed.py --benchmark-only \
       -p no:cacheprovider -o testpaths=benches --benchmark-columns=min,median,mean,rounds

Baseline measured in the same run: the pure-Python oracle of the same
algorithm (tests/oracles/attention_oracle.py), which measures through
``json.dumps``. Cases:

- full pass, under the ratio: measure every row, plan nothing (the common turn);
- full pass, over the ratio: measure, plan, digest the stubbed payloads and
  apply the plan to a clone;
- incremental turn: an ``incremental`` compiler whose session cache already
  holds the history; the history grew by one turn (4 messages);
- turn after the trip: the same history again with a sticky frontier of 311
  rows (224 thinking turns, 87 stubs) re-applied from the session's memo.
"""

from __future__ import annotations

from typing import Any

import pytest
from benches.fixtures.session import build_request
from tests.oracles import attention_oracle as oracle

from prism.assembly.groups import MessageGroups
from prism.attention import (
    compile_attention,
    create_attention_compiler,
    create_attention_measure_cache,
    create_attention_sticky_frontier,
)
from prism.security import NOOP_REDACTOR

MESSAGES: list[dict[str, Any]] = build_request()["messages"]
GROUPS = MessageGroups(history=MESSAGES)
USED = compile_attention(
    create_attention_compiler({"maxInputTokens": 10**9}), GROUPS, redactor=NOOP_REDACTOR
).report.used
ROOMY = create_attention_compiler({"maxInputTokens": 10**9})
# Cap at the request's own size: the gate trips and shrinks to 0.75 of it.
# The reference policy is the oracle's algorithm (the default trips deeper).
TIGHT = create_attention_compiler({"maxInputTokens": USED, "policy": "reference"})
MUTABLE = [False, False, True, False, False, True]


def oracle_pass(cap: int) -> dict[str, Any]:
    lists = [[], [], MESSAGES, [], [], []]
    return oracle.plan(lists, MUTABLE, [[], [], []], cap, 0.75, None, 1, 3, [])


def test_fixture_shape() -> None:
    assert 850 <= len(MESSAGES) <= 950
    assert USED > 1_000_000


@pytest.mark.benchmark(group="attention-full-under")
def test_native_full_pass_under_ratio(benchmark: Any) -> None:
    out = benchmark(compile_attention, ROOMY, GROUPS)
    assert not out.mutated


@pytest.mark.benchmark(group="attention-full-under")
def test_oracle_full_pass_under_ratio(benchmark: Any) -> None:
    plan = benchmark.pedantic(oracle_pass, args=(10**9,), rounds=3, iterations=1)
    assert not plan["rows"]


@pytest.mark.benchmark(group="attention-full-over")
def test_native_full_pass_over_ratio(benchmark: Any) -> None:
    out = benchmark(compile_attention, TIGHT, GROUPS)
    assert out.mutated and out.report.used_after <= 0.75 * USED


@pytest.mark.benchmark(group="attention-full-over")
def test_oracle_full_pass_over_ratio(benchmark: Any) -> None:
    plan = benchmark.pedantic(oracle_pass, args=(USED,), rounds=3, iterations=1)
    assert plan["rows"]


INCREMENTAL = create_attention_compiler({"maxInputTokens": 10**9, "incremental": True})


def _grown() -> tuple[tuple[Any, ...], dict[str, Any]]:
    cache = create_attention_measure_cache()
    compile_attention(
        INCREMENTAL,
        MessageGroups(history=MESSAGES[:-4]),
        measure_cache=cache,
        redactor=NOOP_REDACTOR,
    )
    return (INCREMENTAL, MessageGroups(history=MESSAGES)), {"measure_cache": cache}


@pytest.mark.benchmark(group="attention-incremental")
def test_native_incremental_turn(benchmark: Any) -> None:
    out = benchmark.pedantic(compile_attention, setup=_grown, rounds=200, iterations=1)
    assert out.report.used == USED


@pytest.mark.benchmark(group="attention-incremental")
def test_oracle_incremental_turn_is_a_full_pass(benchmark: Any) -> None:
    # The oracle has no cache: its "incremental" turn is another full pass.
    plan = benchmark.pedantic(oracle_pass, args=(10**9,), rounds=3, iterations=1)
    assert plan["used"] == USED


def _tripped() -> tuple[Any, Any]:
    """An incremental compiler whose gate has tripped on the fixture: 224
    thinking turns stripped and 87 results stubbed, all sticky."""
    compiler = create_attention_compiler(
        {"maxInputTokens": int(USED / 0.75 * 0.6), "incremental": True, "policy": "reference"}
    )
    frontier = create_attention_sticky_frontier()
    compile_attention(compiler, GROUPS, frontier=frontier, redactor=NOOP_REDACTOR)
    return compiler, frontier


@pytest.mark.benchmark(group="attention-incremental")
def test_native_turn_after_trip_reapplies_sticky_rows(benchmark: Any) -> None:
    compiler, frontier = _tripped()
    out = benchmark(compile_attention, compiler, GROUPS, frontier=frontier)
    assert out.mutated and out.report.stubbed_tool_results > 50
