"""Attention wiring: compiler from the agent, sticky frontier per session,
one attention_compiled event per mutated turn, the store never touched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runtime_helpers import make_agent, record

from prism.errors import ConfigError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.tools import define_tool

pytestmark = [
    pytest.mark.anyio,
]

BIG = "y" * 4000


def script(request: Any) -> list[Any]:
    last = request["messages"][-1]
    if last["role"] == "tool":
        return [provider_text_delta("ok"), provider_done()]
    turn = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"call_{turn}", "fetch"), provider_done()]


def agent_with(**options: Any) -> Any:
    provider = create_mock_provider(script)
    agent = make_agent(
        None,
        provider=provider,
        tools=[define_tool("fetch", lambda a, c: BIG)],
        attention_compiler={"maxInputTokens": 2500, "keepLast": 1},
        **options,
    )
    return agent, provider


async def test_compiler_stubs_old_results_in_requests_not_in_the_store() -> None:
    agent, provider = agent_with()
    session = agent.create_session()
    events = record(session)
    for n in range(3):
        await session.run(f"fetch {n}")
    compiled = [e for e in events if e["type"] == "attention_compiled"]
    assert compiled, "the gate should trip once history passes 0.75 of 2500 tokens"
    first = compiled[0]
    assert first["usedAfter"] < first["used"] and first["stubbedToolResults"] >= 1
    assert "runId" in first and first["sessionId"] == session.id
    assert BIG not in json.dumps(first)
    last_request = json.dumps(provider.requests[-1]["messages"])
    assert "omitted" in last_request
    stored = [e for e in await session.entries() if e["message"]["role"] == "tool"]
    assert all(e["message"]["content"][0]["result"] == BIG for e in stored)
    assert session.attention_sticky is not None


async def test_run_overlay_can_switch_the_compiler_off_but_not_on() -> None:
    agent, _provider = agent_with()
    session = agent.create_session()
    events = record(session)
    for n in range(3):
        await session.run(f"fetch {n}", attention=False)
    assert not [e for e in events if e["type"] == "attention_compiled"]
    plain = make_agent([provider_text_delta("x"), provider_done()]).create_session()
    with pytest.raises(ConfigError, match="cannot be enabled from a run"):
        await plain.run("hi", attention={"keepLast": 1})
    assert await plain.entries() == []


def test_an_unresolvable_input_cap_fails_at_create_agent() -> None:
    with pytest.raises(ConfigError, match="input cap"):
        make_agent([provider_done()], attention_compiler=True)


async def test_budget_error_is_the_runs_error_event() -> None:
    provider = create_mock_provider(script)
    agent = make_agent(
        None,
        provider=provider,
        tools=[define_tool("fetch", lambda a, c: BIG)],
        attention_compiler={"maxInputTokens": 50},
    )
    session = agent.create_session()
    events = record(session)
    from prism.errors import AttentionBudgetError

    with pytest.raises(AttentionBudgetError):
        await session.run("x" * 2000)
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "attention_budget_exceeded"
    assert not session.is_running
