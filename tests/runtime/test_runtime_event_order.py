"""The event orders docs/events.md promises, one test per scenario."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runtime_helpers import kinds, make_agent, record, stored_roles

from prism.errors import ProviderError, RunAbortedError
from prism.providers import (
    provider_done,
    provider_error,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
    provider_usage,
)
from prism.retry import RetryOptions
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]


async def test_plain_reply() -> None:
    agent = make_agent(
        [
            provider_thinking_delta("hmm"),
            provider_text_delta("Hel"),
            provider_text_delta("lo"),
            provider_usage(input_tokens=3, output_tokens=2),
            provider_done("stop"),
        ]
    )
    session = agent.create_session("s1")
    events = record(session)
    result = await session.run("Hi")
    assert kinds(events) == [
        "run_started",
        "message_started",
        "message_delta:thinking",
        "message_delta:text",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]
    assert result.text == "Hello"
    assert result.stop_reason == "stop"
    assert result.usage == {"inputTokens": 3, "outputTokens": 2}
    run_id = events[0]["runId"]
    assert all(e["sessionId"] == "s1" and e["runId"] == run_id for e in events)
    finished = events[-2]
    assert finished["message"]["content"] == [
        {"type": "thinking", "text": "hmm"},
        {"type": "text", "text": "Hello"},
    ]
    assert finished["messageId"] == events[1]["messageId"]
    assert await stored_roles(session) == ["user", "assistant"]


async def test_tool_round() -> None:
    agent = make_agent([[provider_tool_call("c1", "echo", {"x": 1}), provider_done()], FINAL])
    session = agent.create_session()
    events = record(session)
    result = await session.run("use the tool")
    assert kinds(events) == [
        "run_started",
        "message_started",
        "message_finished",
        "tool_call:echo",
        "tool_result:echo",
        "message_started",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]
    assert events[4]["result"] == {"toolCallId": "c1", "name": "echo", "value": {"echo": {"x": 1}}}
    assert result.tool_rounds == 1
    assert await stored_roles(session) == ["user", "assistant", "tool", "assistant"]


async def test_two_parallel_tools_results_in_completion_order_stored_in_call_order() -> None:
    b_done = anyio.Event()

    async def slow(args: dict[str, Any], ctx: Any) -> str:
        await b_done.wait()  # only finishes because "fast" runs concurrently
        return "slow"

    def fast(args: dict[str, Any], ctx: Any) -> str:
        b_done.set()
        return "fast"

    agent = make_agent(
        [
            [provider_tool_call("a", "slow"), provider_tool_call("b", "fast"), provider_done()],
            FINAL,
        ],
        tools=[define_tool("slow", slow), define_tool("fast", fast)],
        tool_concurrency=2,
    )
    session = agent.create_session()
    events = record(session)
    with anyio.fail_after(5):
        await session.run("both")
    assert kinds(events) == [
        "run_started",
        "message_started",
        "message_finished",
        "tool_call:slow",
        "tool_call:fast",
        "tool_result:fast",
        "tool_result:slow",
        "message_started",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]
    stored = [e["message"] for e in await session.entries()]
    assert [m["content"][0].get("toolCallId") for m in stored[2:4]] == ["a", "b"]


async def test_retried_turn() -> None:
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    agent = make_agent(
        [[provider_error("upstream overloaded", "503")], FINAL],
        retry=RetryOptions(base_delay_ms=250, jitter=False),  # exact delays
        sleep=fake_sleep,
    )
    session = agent.create_session()
    events = record(session)
    result = await session.run("Hi")
    assert kinds(events) == [
        "run_started",
        "retry_scheduled",
        "message_started",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]
    assert events[1]["attempt"] == 1
    assert events[1]["delayMs"] == 250
    assert events[1]["error"]["code"] == "503"
    assert delays == [0.25]
    assert result.text == "done"


async def test_abort_mid_stream() -> None:
    agent = make_agent([provider_text_delta("a"), provider_text_delta("b"), provider_done()])
    session = agent.create_session()
    events = record(session)

    def abort_on_first_delta(event: dict[str, Any]) -> None:
        if event["type"] == "message_delta":
            session.abort("user pressed stop")

    session.subscribe(abort_on_first_delta)
    with pytest.raises(RunAbortedError, match="Agent run aborted"):
        await session.run("Hi")
    assert kinds(events) == ["run_started", "message_started", "message_delta:text", "error"]
    assert events[-1]["error"] == {
        "message": "Agent run aborted",
        "code": "aborted",
        "details": {"reason": "user pressed stop"},
    }
    assert await stored_roles(session) == ["user"]
    assert not session.is_running


async def test_provider_error() -> None:
    agent = make_agent([provider_error("bad request", "invalid_request")])
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError, match="bad request"):
        await session.run("Hi")
    assert kinds(events) == ["run_started", "error"]
    assert events[-1]["error"] == {"message": "bad request", "code": "invalid_request"}
    assert await stored_roles(session) == ["user"]


async def test_unknown_tool() -> None:
    executed: list[str] = []
    agent = make_agent(
        [[provider_tool_call("c1", "nope", {}), provider_done()], FINAL],
        tools=[define_tool("echo", lambda a, c: executed.append("echo"))],
    )
    session = agent.create_session()
    events = record(session)
    await session.run("Hi")
    assert kinds(events) == [
        "run_started",
        "message_started",
        "message_finished",
        "tool_call:nope",
        "tool_result:nope!",
        "message_started",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]
    assert events[4]["result"]["value"]["code"] == "unknown_tool"
    assert executed == []


async def test_auto_compaction_happens_before_the_first_provider_turn() -> None:
    from prism.compaction import CompactionOptions

    agent = make_agent(FINAL, compaction=CompactionOptions(threshold_entries=2))
    session = agent.create_session()
    await session.run("one")
    events = record(session)
    await session.run("two")
    assert kinds(events) == [
        "run_started",
        "compaction_started",
        "compaction_finished",
        "message_started",
        "message_delta:text",
        "message_finished",
        "run_finished",
    ]


async def test_model_change_outside_a_run_has_no_run_id() -> None:
    session = make_agent(FINAL).create_session()
    events = record(session)
    await session.set_model({"provider": "mock", "model": "other"})
    assert kinds(events) == ["model_changed"]
    assert "runId" not in events[0]
