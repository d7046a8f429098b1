"""The compiler inside a real session (mock provider): one attention_compiled
per mutated turn with counts only, the budget error as the run's error event,
the incremental cache riding on the session frontier, and the truncation
trigger handing off to compaction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prism.attention import AttentionBudgetError, create_attention_truncation_trigger
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.tools import define_tool

pytestmark = pytest.mark.anyio
MODEL = {"provider": "mock", "model": "demo"}
BIG = "q" * 6000


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("done"), provider_done()]
    n = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"call_{n}", "fetch", {"n": n}), provider_done()]


def make(attention: Any, *, tool: Any = None, **options: Any) -> tuple[Any, Any]:
    provider = create_mock_provider(script)
    fetch = tool or define_tool("fetch", lambda args, ctx: BIG)
    agent = create_agent(
        model=MODEL, provider=provider, tools=[fetch], attention_compiler=attention, **options
    )
    return agent, provider


async def test_one_event_per_mutated_turn_counts_only() -> None:
    agent, provider = make({"maxInputTokens": 4000, "keepLast": 1})
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    for n in range(4):
        await session.run(f"task {n}")
    compiled = [e for e in events if e["type"] == "attention_compiled"]
    assert compiled
    keys = {
        "type",
        "sessionId",
        "runId",
        "used",
        "usedAfter",
        "inputCap",
        "triggerRatio",
        "droppedThinkingTurns",
        "stubbedToolResults",
        "stubbedBytes",
        "truncated",
    }
    for event in compiled:
        assert set(event) == keys
        assert BIG not in json.dumps(event)
    # Mutated provider requests == attention_compiled events (one per turn).
    mutated = sum(1 for r in provider.requests if "omitted" in json.dumps(r["messages"]))
    assert mutated == len(compiled)


async def test_budget_error_is_the_runs_error_event() -> None:
    failing = define_tool("fetch", lambda args, ctx: BIG)
    agent, _ = make({"maxInputTokens": 2000, "keepLast": 5}, tool=failing)
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    with pytest.raises(AttentionBudgetError):
        for n in range(4):
            await session.run(f"task {n}")
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[-1]["error"]["code"] == "attention_budget_exceeded"
    assert BIG not in json.dumps(errors[-1])
    assert not session.is_running
    stored = [e for e in await session.entries() if e["message"]["role"] == "tool"]
    assert all(e["message"]["content"][0]["result"] == BIG for e in stored)


async def test_incremental_compiler_uses_the_session_cache() -> None:
    agent, provider = make({"maxInputTokens": 4000, "keepLast": 1, "incremental": True})
    plain, plain_provider = make({"maxInputTokens": 4000, "keepLast": 1})
    a, b = agent.create_session(), plain.create_session()
    for n in range(4):
        await a.run(f"task {n}")
        await b.run(f"task {n}")
    assert [r["messages"] for r in provider.requests] == [
        r["messages"] for r in plain_provider.requests
    ]
    hits, _misses = a.attention_sticky.measure_cache.stats()
    assert hits > 0


async def test_truncation_trigger_hands_off_to_compaction() -> None:
    truncation = create_attention_truncation_trigger(threshold=1)
    agent, _ = make(
        # Truncation is the reference policy's signal (a deep trip never stops early).
        {"maxInputTokens": 9000, "keepLast": 1, "policy": "reference"},
        compaction={"trigger": truncation.trigger, "keepRecentEntries": 2},
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    session.subscribe(truncation.observe)
    for n in range(8):
        await session.run(f"task {n}")
    kinds = [
        "truncated" if e.get("truncated") else e["type"]
        for e in events
        if e["type"] in ("attention_compiled", "compaction_finished")
    ]
    first = kinds.index("truncated")
    assert kinds[first + 1] == "compaction_finished"
    assert truncation.streak() == 0
