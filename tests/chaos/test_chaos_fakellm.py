"""The OpenAI-compatible adapter and a full agent session against fakellm,
a rule-driven OpenAI mock from PyPI, run as a real server process.

fakellm streams text word by word and each tool call's JSON arguments in
four fragments, with [DONE]. It sends no usage chunk when streaming (its
non-streaming responses carry usage; the adapter only streams), so usage is
checked against llmock (test_chaos_llmock_faults.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.chaos.servers import ServerProcess

from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.tools import define_tool

MODEL = {"provider": "openai-compatible", "model": "gpt-4o-mini"}
KEY = "sk-chaos-suite-not-a-real-key-0001"


def _request(text: str, *, tools: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }
    if tools:
        request["tools"] = [
            {"name": "get_weather", "description": "weather", "parameters": {"type": "object"}},
            {"name": "get_time", "description": "time", "parameters": {"type": "object"}},
        ]
    return request


async def _events(server: ServerProcess, request: dict[str, Any]) -> list[dict[str, Any]]:
    async with create_openai_compatible_provider(
        base_url=server.url + "/v1", api_key=KEY, redactor=NOOP_REDACTOR
    ) as provider:
        return [dict(event) async for event in provider.generate(request)]  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_unicode_text_streams_word_by_word_and_reassembles_exactly(
    fakellm_process: ServerProcess,
) -> None:
    events = await _events(fakellm_process, _request("unicode please"))
    deltas = [e["text"] for e in events if e["type"] == "content_delta"]
    assert len(deltas) == 8  # one SSE chunk per word: many deltas, not one blob
    assert "".join(deltas) == "héllo wörld — 日本語 테스트 🎉 «ok» done"
    assert events[-1] == {"type": "done", "stopReason": "stop"}
    assert not [e for e in events if e["type"] == "error"]


@pytest.mark.anyio
async def test_parallel_tool_calls_with_fragmented_arguments(
    fakellm_process: ServerProcess,
) -> None:
    events = await _events(fakellm_process, _request("parallel please", tools=True))
    fragments: dict[int, list[str]] = {}
    for event in events:
        if event["type"] == "tool_call_delta" and "argumentsDelta" in event:
            fragments.setdefault(event["index"], []).append(event["argumentsDelta"])
    # Each call's arguments arrived in several pieces, interleaved by index.
    assert sorted(fragments) == [0, 1, 2]
    assert all(len(pieces) > 1 for pieces in fragments.values())
    calls = [e["toolCall"] for e in events if e["type"] == "tool_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("get_weather", {"city": "Zürich", "days": [1, 2, 3], "nested": {"a": {"b": "c"}}}),
        ("get_time", {"zone": "Asia/Tokyo"}),
        ("get_weather", {}),
    ]
    for index, call in enumerate(calls):
        assert json.loads("".join(fragments[index])) == call["arguments"]
    assert len({c["id"] for c in calls}) == 3
    assert events[-1] == {"type": "done", "stopReason": "tool_calls"}


@pytest.mark.anyio
async def test_agent_session_runs_both_tools_and_answers(fakellm_process: ServerProcess) -> None:
    executed: list[tuple[str, dict[str, Any]]] = []

    def weather(args: dict[str, Any], ctx: Any) -> str:
        executed.append(("get_weather", args))
        return "sunny, 21 degrees"

    def clock(args: dict[str, Any], ctx: Any) -> str:
        executed.append(("get_time", args))
        return "14:00"

    provider = create_openai_compatible_provider(
        base_url=fakellm_process.url + "/v1", api_key=KEY, redactor=NOOP_REDACTOR
    )
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[
            define_tool("get_weather", weather, parameters={"type": "object"}),
            define_tool("get_time", clock, parameters={"type": "object"}),
        ],
    )
    session = agent.create_session()
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)
    async with provider:
        result = await session.run("weather round: Paris, please")
    assert result.text == "Paris is sunny at 21 degrees; it is 14:00 there."
    assert result.stop_reason == "stop"
    assert result.tool_rounds == 1
    assert executed == [
        ("get_weather", {"city": "Paris", "units": "metric", "note": "naïve café ☕"}),
        ("get_time", {"zone": "Europe/Paris"}),
    ]
    results = [e["result"] for e in seen if e["type"] == "tool_result"]
    assert [r["name"] for r in results] == ["get_weather", "get_time"]
    assert not any(r.get("isError") for r in results)
    # The second turn sent both results back, answering each call by its id.
    tool_messages = [m for m in result.messages if m["role"] == "tool"]
    assert len(tool_messages) == 2
    assert KEY not in json.dumps(seen, default=str)
