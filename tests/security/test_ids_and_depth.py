"""Ids are structure, not content (issue 11.4); one nesting limit at the
provider edge (issue 11.6); unusable tool arguments are a tool error, not a
failed run (issue 18.4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism.errors import ConfigError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
    provider_tool_call_delta,
)
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.limits import MAX_VALUE_DEPTH
from prism.security.redaction import ID_KEYS, redact_keeping_ids
from prism.stores import create_jsonl_session_store, create_memory_session_store
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}
SECRET = "acme-prod"
LONG_SECRET = "sk-long-" + "k" * 90


def _echo() -> Any:
    return define_tool("echo", lambda args, ctx: {"ok": True})


def _nested(depth: int, key: str = "k") -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {key: value}
    return value


def _chain_is_whole(entries: list[dict[str, Any]]) -> bool:
    ids = {entry["id"] for entry in entries}
    return all(entry.get("parentId") in (None, *ids) for entry in entries)


# --- ids -------------------------------------------------------------------------


def test_a_session_id_holding_a_secret_is_refused_with_a_clear_error() -> None:
    agent = create_agent(
        model=MODEL, provider=create_mock_provider([provider_done()]), secrets=[SECRET]
    )
    with pytest.raises(ConfigError, match="session id contains one of the agent's secrets"):
        agent.create_session("project-acme-prod-notes")


@pytest.mark.anyio
@pytest.mark.parametrize("store_kind", ["memory", "jsonl"])
async def test_ids_holding_a_secret_survive_and_no_conversation_vanishes(
    store_kind: str, tmp_path: Path
) -> None:
    store = (
        create_memory_session_store()
        if store_kind == "memory"
        else create_jsonl_session_store(tmp_path / "s.jsonl")
    )
    call_id = f"call-{SECRET}-1"
    script = [
        [
            provider_text_delta(f"using {SECRET}"),
            provider_tool_call(call_id, "echo", {"q": SECRET}),
            provider_done(),
        ],
        [provider_text_delta("done"), provider_done()],
    ]
    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider(script),
        secrets=[SECRET],
        tools=[_echo()],
        store=store,
    )
    session = agent.create_session("notes")
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    await session.run(f"hello {SECRET}")
    reopened = await agent.open_session("notes")
    entries = await reopened.entries()
    messages = [e["message"] for e in entries if e["kind"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert _chain_is_whole(entries)
    assert messages[2]["content"][0]["toolCallId"] == call_id  # still pairs with its call
    assert any(block.get("id") == call_id for block in messages[1]["content"])
    text = json.dumps([e["message"] for e in entries if e["kind"] == "message"])
    assert text.count(SECRET) == 2  # exactly the two copies of the id, nothing else
    tool_events = [e for e in events if e["type"] in ("tool_call", "tool_result")]
    assert tool_events[0]["toolCall"]["id"] == call_id
    assert tool_events[1]["result"]["toolCallId"] == call_id


_ids = st.sampled_from(["a", f"x-{SECRET}", SECRET, f"{SECRET}{SECRET}"])
_keys = st.sampled_from([*ID_KEYS, "text", "note", SECRET])
_values: Any = st.recursive(
    st.none() | st.integers() | _ids | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200)
@given(_values)
def test_redact_keeping_ids_property(value: Any) -> None:
    """For any JSON-like value: id strings are kept exactly, every other
    string is redacted, and the input is never edited."""
    redactor = create_redactor([SECRET])
    before = json.dumps(value)
    out = redact_keeping_ids(value, redactor)
    assert json.dumps(value) == before

    def check(original: Any, redacted: Any) -> None:
        if isinstance(original, dict):
            assert isinstance(redacted, dict)
            for key, item in original.items():
                if SECRET in key:
                    continue
                if key in ID_KEYS and isinstance(item, str):
                    assert redacted[key] == item
                else:
                    check(item, redacted[key])
        elif isinstance(original, list):
            for a, b in zip(original, redacted, strict=True):
                check(a, b)
        elif isinstance(original, str):
            assert SECRET not in redacted

    check(value, out)


# --- one nesting limit at the provider edge ------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [MAX_VALUE_DEPTH + 1, 99, 150, 400])
@pytest.mark.parametrize("store_kind", ["memory", "jsonl"])
async def test_deep_tool_arguments_become_a_tool_error_and_the_run_goes_on(
    depth: int, store_kind: str, tmp_path: Path
) -> None:
    arguments = _nested(depth, key=LONG_SECRET)
    store = (
        create_memory_session_store()
        if store_kind == "memory"
        else create_jsonl_session_store(tmp_path / "s.jsonl")
    )
    script = [
        [provider_tool_call_delta(0, "c1", "echo", json.dumps(arguments)), provider_done()],
        [provider_text_delta("recovered"), provider_done()],
    ]
    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider(script),
        secrets=[LONG_SECRET],
        tools=[_echo()],
        store=store,
    )
    session = agent.create_session("deep")
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    result = await session.run("go")
    assert result.text == "recovered"
    tool_result = next(e["result"] for e in events if e["type"] == "tool_result")
    assert tool_result["isError"] is True
    assert tool_result["value"]["code"] == "invalid_arguments"
    message = tool_result["value"]["message"]
    assert "nested deeper than" in message or "nested too deeply" in message
    assert len(message) < 300
    assert LONG_SECRET[:12] not in json.dumps(events)
    entries = await (await agent.open_session("deep")).entries()
    assert LONG_SECRET[:12] not in json.dumps(entries)
    assert [e["message"]["role"] for e in entries if e["kind"] == "message"] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


@pytest.mark.anyio
async def test_deep_complete_tool_call_is_refused_at_the_edge_too() -> None:
    script = [
        [provider_tool_call("c1", "echo", _nested(99)), provider_done()],
        [provider_text_delta("ok"), provider_done()],
    ]
    agent = create_agent(
        model=MODEL, provider=create_mock_provider(script), tools=[_echo()], secrets=[SECRET]
    )
    session = agent.create_session()
    result = await session.run("go")
    assert result.text == "ok"
    tool = next(m for m in result.messages if m["role"] == "tool")
    assert tool["content"][0]["isError"] is True


@pytest.mark.anyio
async def test_a_deep_tool_result_is_a_tool_error() -> None:
    script = [
        [provider_tool_call("c1", "deep", {}), provider_done()],
        [provider_text_delta("ok"), provider_done()],
    ]
    deep = define_tool("deep", lambda args, ctx: _nested(120, key=LONG_SECRET))
    agent = create_agent(
        model=MODEL, provider=create_mock_provider(script), tools=[deep], secrets=[LONG_SECRET]
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    result = await session.run("go")
    assert result.text == "ok"
    tool_result = next(e["result"] for e in events if e["type"] == "tool_result")
    assert tool_result["value"]["code"] == "tool_error"
    assert "nested deeper than" in tool_result["value"]["message"]
    assert LONG_SECRET[:12] not in json.dumps(events)


# --- malformed arguments from a real adapter (issue 18.4) -------------------------


def _sse(*chunks: dict[str, Any]) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "raw", ['{"a": 1', "[1, 2]", "{" * 5000 + "}" * 5000, json.dumps(_nested(80))]
)
async def test_malformed_arguments_from_the_adapter_are_an_invalid_arguments_tool_error(
    raw: str,
) -> None:
    bodies = [
        _sse(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c1",
                                    "function": {"name": "echo", "arguments": raw},
                                }
                            ]
                        },
                        "finish_reason": "tool_calls",
                    }
                ]
            }
        ),
        _sse({"choices": [{"index": 0, "delta": {"content": "fixed"}, "finish_reason": "stop"}]}),
    ]
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        body = bodies[len(requests) - 1]
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    provider = create_openai_compatible_provider(
        base_url="https://llm.example.invalid/v1",
        api_key="sk-adapter-0123456789",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        redactor=NOOP_REDACTOR,
    )
    agent = create_agent(
        model={"provider": "openai-compatible", "model": "m"}, provider=provider, tools=[_echo()]
    )
    result = await agent.create_session().run("go")
    assert result.text == "fixed"
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "c1"
    assert "invalid_arguments" in tool_message["content"]
