"""Where durability, leases and streaming meet (issue 34, items 1, 2, 8 and
13): appends from a stale handle, a dropped durable stream followed by the
next run, a durable run whose closing write fails, and input that is not
valid Unicode. Real JSONL files, two handles where the item is about two
writers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from runtime_helpers import MODEL, make_agent, record

from prism.errors import ConfigError, ProviderError, SessionBusyError, StoreError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores.jsonl import JsonlSessionStore
from prism.tools import define_tool

pytestmark = pytest.mark.anyio


def answer(request: Any) -> list[Any]:
    return [provider_text_delta("ok"), provider_done()]


def unpaired_calls(messages: list[Any]) -> list[str]:
    """Tool calls of a message list that no later tool message answers."""
    answered = {
        block["toolCallId"]
        for m in messages
        if m["role"] == "tool"
        for block in m["content"]
        if block["type"] == "tool_result"
    }
    return [
        block["id"]
        for m in messages
        if m["role"] == "assistant"
        for block in m["content"]
        if block["type"] == "tool_call" and block["id"] not in answered
    ]


def user_texts(messages: list[Any]) -> list[str]:
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


# --- item 1: non-run appends from a stale handle ------------------------------------


@pytest.mark.parametrize("append", ["set_model", "add_label", "append_custom"])
async def test_an_append_from_a_stale_handle_follows_the_newer_exchange(
    append: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "s.jsonl")
    agent = make_agent(answer, store=JsonlSessionStore(path))
    stale = agent.create_session("s")
    await stale.run("first")
    other = make_agent(answer, store=JsonlSessionStore(path)).create_session("s")
    await other.run("second")  # another handle (a second store instance) goes on

    if append == "set_model":
        await stale.set_model({"provider": "mock", "model": "other"})
    elif append == "add_label":
        await stale.add_label("here")
    else:
        await stale.append_custom("note", {"n": 1})

    # The appended entry sits after the other handle's exchange, not beside it.
    fresh = make_agent(answer, store=JsonlSessionStore(path)).create_session("s")
    assert user_texts(await fresh.messages()) == ["first", "second"]
    assert user_texts(await stale.messages()) == ["first", "second"]
    if append == "add_label":
        entries = await fresh.branch_entries()
        assert entries[-1]["targetId"] == entries[-2]["id"]  # type: ignore[typeddict-item]


async def test_an_append_during_another_handles_run_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    entered, leave = anyio.Event(), anyio.Event()

    async def hold(args: Any, ctx: Any) -> str:
        entered.set()
        await leave.wait()
        return "held"

    def script(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta("done"), provider_done()]
        return [provider_tool_call("c1", "hold", {}), provider_done()]

    runner = make_agent(
        script, store=JsonlSessionStore(path), tools=[define_tool("hold", hold)]
    ).create_session("s")
    other = make_agent(answer, store=JsonlSessionStore(path)).create_session("s")
    async with anyio.create_task_group() as group:
        group.start_soon(runner.run, "go")
        await entered.wait()
        # The same lease a run takes: another writer cannot slip in mid-run.
        with pytest.raises(SessionBusyError):
            await other.append_custom("note")
        await runner.append_custom("mine")  # the running handle shares its lease
        leave.set()
    messages = await other.messages()
    assert unpaired_calls(messages) == []


# --- item 2: a dropped durable stream and the next run ------------------------------


async def test_the_next_run_waits_for_a_dropped_durable_runs_closing(tmp_path: Path) -> None:
    started = anyio.Event()

    async def slow(args: Any, ctx: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    requests: list[Any] = []

    def script(request: Any) -> list[Any]:
        requests.append(request)
        if user_texts(request["messages"])[-1] == "next":
            return [provider_text_delta("fine"), provider_done()]
        return [provider_tool_call("c1", "slow", {}), provider_done()]

    agent = make_agent(
        script,
        store=JsonlSessionStore(str(tmp_path / "s.jsonl")),
        tools=[define_tool("slow", slow)],
        durable=True,
    )
    session = agent.create_session("s")
    async for event in session.stream("first"):
        if event["type"] == "tool_call":
            break  # drops the stream: the run is aborted while its tool runs
    assert not session.is_running

    result = await session.run("next")

    assert result.text == "fine"
    assert unpaired_calls(requests[-1]["messages"]) == []
    messages = await session.messages()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    closing = messages[2]["content"][0]
    assert closing["result"]["code"] == "run_ended"  # type: ignore[typeddict-item]
    assert await session.resume() is None  # both runs are finished


# --- item 8: a closing write that fails --------------------------------------------


class FailingStore(JsonlSessionStore):
    """A real JSONL store whose writes fail while ``broken`` is set."""

    broken = False

    async def append_many(self, entries: Any) -> None:
        if self.broken:
            raise StoreError("disk full")
        await super().append_many(entries)


async def test_a_failed_closing_write_is_reported_and_resume_can_tell(tmp_path: Path) -> None:
    store = FailingStore(str(tmp_path / "s.jsonl"))
    calls = 0

    def script(request: Any) -> list[Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return [provider_tool_call("c1", "echo", {"n": 1}), provider_done()]
        if calls == 2:
            store.broken = True  # the run fails, and so does its closing write
            return [provider_error("overloaded")]
        return [provider_text_delta("done"), provider_done()]

    session = make_agent(script, store=store, durable=True, retry=False).create_session("s")
    events = record(session)
    with pytest.raises(ProviderError):
        await session.run("go")

    warnings = [e for e in events if e["type"] == "checkpoint_warning"]
    assert len(warnings) == 1 and warnings[0]["field"] == "end"
    assert "stays unfinished" in warnings[0]["message"]
    assert [e["type"] for e in events][-1] == "error"
    store.broken = False
    # The run was not closed, and a resume sees that: it finishes the run.
    fresh = make_agent(script, store=FailingStore(store.path), durable=True).create_session("s")
    result = await fresh.resume()
    assert result is not None and result.text == "done"


# --- item 13 (first half): input that is not valid Unicode -------------------------


@pytest.mark.parametrize(
    "value",
    [
        "a\ud800b",
        {"role": "user", "content": [{"type": "text", "text": "\udfff"}]},
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": "\ud83d"}],
            }
        ],
    ],
)
async def test_a_lone_surrogate_is_a_config_error_before_the_run_starts(value: Any) -> None:
    agent = create_agent(model=MODEL, provider=create_mock_provider(answer))
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ConfigError, match="lone surrogate"):
        await session.run(value)
    assert events == []
    assert await session.entries() == []
    with pytest.raises(ConfigError, match="lone surrogate"):
        [event async for event in session.stream(value)]
    assert events == []
