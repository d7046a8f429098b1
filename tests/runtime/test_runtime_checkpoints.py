"""Durable runs in one process: the checkpoint entries a run writes, resume
from hand-placed states, aborts, and malformed checkpoints (never fatal)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_helpers import MODEL, make_agent

from prism.errors import ConfigError, RunAbortedError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.runtime.durable import CHECKPOINT_CUSTOM_TYPE, parse_checkpoint
from prism.stores import create_memory_session_store
from prism.tools import define_tool

pytestmark = pytest.mark.anyio


def tool_then_text(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("done"), provider_done()]
    n = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"c{n}", "echo", {"n": n}), provider_done()]


class CountingStore:
    """A memory store that counts ``append_many`` calls (one per write)."""

    def __init__(self) -> None:
        self.inner = create_memory_session_store()
        self.writes = 0

    async def append(self, entry: Any) -> None:
        self.writes += 1
        await self.inner.append(entry)

    async def append_many(self, entries: Any) -> None:
        self.writes += 1
        await self.inner.append_many(entries)

    async def list(self, session_id: str) -> Any:
        return await self.inner.list(session_id)

    async def get(self, entry_id: str) -> Any:
        return await self.inner.get(entry_id)

    async def list_sessions(self) -> Any:
        return await self.inner.list_sessions()


def checkpoints(entries: list[Any]) -> list[dict[str, Any]]:
    return [e["data"] for e in entries if e.get("customType") == CHECKPOINT_CUSTOM_TYPE]


async def test_a_plain_run_writes_no_checkpoint_and_one_batch_per_round() -> None:
    store = CountingStore()
    session = make_agent(tool_then_text, store=store).create_session()
    await session.run("go")
    assert checkpoints(await session.entries()) == []
    assert store.writes == 3  # input, assistant+result, answer


async def test_a_durable_run_checkpoints_each_step_in_the_batch_it_writes_anyway() -> None:
    store = CountingStore()
    agent = make_agent(tool_then_text, store=store, tools=[define_tool("echo", lambda a, c: a)])
    session = agent.create_session()
    result = await session.run("go", durable=True)
    entries = await session.entries()
    found = checkpoints(entries)
    # The final answer carries the "end" checkpoint: nothing was queued.
    assert [c["phase"] for c in found] == ["input", "turn", "tool_start", "tool", "end"]
    assert [c["step"] for c in found] == [1, 2, 3, 4, 5]
    assert {c["runId"] for c in found} == {result.run_id}
    assert found[0]["startEntryId"] == entries[0]["id"]
    assert found[1]["pendingToolCalls"] == [{"id": "c1", "name": "echo", "arguments": {"n": 1}}]
    assert found[2]["startedToolCallIds"] == ["c1"]
    assert "pendingToolCalls" not in found[3]  # empty lists are left out
    assert found[-1]["status"] == "completed"
    assert "sessionState" not in found[0]  # only with persist_session_state
    # One write per checkpoint: the tool-start marker is the only
    # checkpoint-only batch.
    assert store.writes == len(found)
    # Nothing to resume once the run finished.
    assert await session.resume() is None


async def test_an_idempotent_tool_needs_no_start_marker() -> None:
    agent = make_agent(
        tool_then_text, tools=[define_tool("echo", lambda a, c: a, idempotent=True)], durable=True
    )
    session = agent.create_session()
    await session.run("go")
    phases = [c["phase"] for c in checkpoints(await session.entries())]
    assert phases == ["input", "turn", "tool", "end"]


async def test_session_state_rides_in_the_checkpoint_with_persist_session_state() -> None:
    agent = make_agent(tool_then_text, durable=True, persist_session_state=True)
    session = agent.create_session()
    model = {"provider": "mock", "model": "other"}
    await session.run("go", model=model)
    last = checkpoints(await session.entries())[-1]
    assert last["sessionState"] == {"model": model}


def test_durable_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="durable must be a bool"):
        make_agent(tool_then_text, durable="yes")
    with pytest.raises(ConfigError, match="idempotent must be a bool"):
        define_tool("t", lambda a, c: a, idempotent=1)  # type: ignore[arg-type]


async def test_a_bad_run_option_is_refused_before_anything_is_stored() -> None:
    session = make_agent(tool_then_text).create_session()
    with pytest.raises(ConfigError, match="run option durable must be a bool"):
        await session.run("go", durable="yes")  # type: ignore[typeddict-item]
    assert await session.entries() == []


async def test_resume_without_any_durable_run_is_a_no_op() -> None:
    session = make_agent(tool_then_text).create_session()
    assert await session.resume() is None
    await session.run("go")
    assert await session.resume() is None
    assert not session.is_running


async def test_an_aborted_durable_run_is_closed_and_not_resumed() -> None:
    started = anyio.Event()

    async def slow(args: Any, ctx: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = make_agent(tool_then_text, tools=[define_tool("echo", slow)], durable=True)
    session = agent.create_session()
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await session.run("go")
        except RunAbortedError as error:
            failures.append(error)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        session.abort("stop")
    assert len(failures) == 1
    entries = await session.entries()
    assert checkpoints(entries)[-1]["phase"] == "end"
    assert checkpoints(entries)[-1]["status"] == "aborted"
    # The recorded call is answered, so the branch stays a valid conversation.
    tool_messages = [e["message"] for e in entries if e.get("message", {}).get("role") == "tool"]
    assert tool_messages[-1]["content"][0]["result"]["code"] == "run_ended"
    assert await session.resume() is None


async def _crashed_session(store: Any, data: dict[str, Any], last_role: str) -> Any:
    """A session whose store holds one unfinished durable run, placed by hand."""
    session_id = "hand"
    user = {"role": "user", "content": [{"type": "text", "text": "go"}]}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "first"}]}
    entries: list[Any] = [
        {"id": "e1", "sessionId": session_id, "parentId": None, "kind": "message", "message": user}
    ]
    if last_role == "assistant":
        entries.append(
            {
                "id": "e2",
                "sessionId": session_id,
                "parentId": "e1",
                "kind": "message",
                "message": answer,
            }
        )
    entries.append(
        {
            "id": "cp",
            "sessionId": session_id,
            "parentId": entries[-1]["id"],
            "kind": "custom",
            "customType": CHECKPOINT_CUSTOM_TYPE,
            "data": data,
        }
    )
    await store.append_many(entries)
    return session_id


async def test_resume_continues_with_the_checkpointed_follow_up_and_model() -> None:
    store = create_memory_session_store()
    model = {"provider": "mock", "model": "saved"}
    follow_up = {"role": "user", "content": [{"type": "text", "text": "and then?"}]}
    data = {
        "version": 1,
        "runId": "run_saved",
        "step": 3,
        "phase": "turn",
        "pendingToolCalls": [],
        "startedToolCallIds": [],
        "steering": [],
        "followUps": [follow_up],
        "sessionState": {"model": model},
    }
    session_id = await _crashed_session(store, data, "assistant")
    provider = create_mock_provider([[provider_text_delta("second"), provider_done()]])
    agent = create_agent(model=MODEL, provider=provider, store=store)
    session = agent.create_session(session_id)
    result = await session.resume()
    assert result is not None and result.run_id == "run_saved" and result.text == "second"
    assert len(provider.requests) == 1  # the recorded answer was not requested again
    assert provider.requests[0]["model"] == model
    assert provider.requests[0]["messages"][-1] == follow_up
    found = checkpoints(await session.entries())
    assert [(c["step"], c["phase"]) for c in found] == [(3, "turn"), (4, "input"), (5, "end")]


async def test_resume_requests_the_turn_a_crash_lost() -> None:
    store = create_memory_session_store()
    data = {"version": 1, "runId": "run_x", "step": 1, "phase": "input"}
    session_id = await _crashed_session(store, data, "user")
    provider = create_mock_provider([[provider_text_delta("answer"), provider_done()]])
    session = create_agent(model=MODEL, provider=provider, store=store).create_session(session_id)
    result = await session.resume()
    assert result is not None and result.text == "answer"
    assert [m["role"] for m in result.messages] == ["user", "assistant"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = st.sampled_from(
    [
        "version",
        "runId",
        "step",
        "phase",
        "status",
        "pendingToolCalls",
        "startedToolCallIds",
        "steering",
        "followUps",
        "sessionState",
        "startEntryId",
    ]
)
CHECKPOINT_DATA = JSON | st.dictionaries(FIELDS, JSON | st.sampled_from(["input", "turn", "end"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=CHECKPOINT_DATA, last_role=st.sampled_from(["user", "assistant"]))
def test_a_malformed_checkpoint_never_crashes_resume(data: Any, last_role: str) -> None:
    async def scenario() -> None:
        store = create_memory_session_store()
        session_id = await _crashed_session(store, data, last_role)
        provider = create_mock_provider([[provider_text_delta("ok"), provider_done()]] * 3)
        session = create_agent(model=MODEL, provider=provider, store=store).create_session(
            session_id
        )
        events: list[Any] = []
        session.subscribe(events.append)
        result = await session.resume()
        if isinstance(data, dict) and data.get("phase") == "end":
            assert result is None
        else:
            assert result is not None and result.text in ("ok", "first")
        warnings = [e for e in events if e["type"] == "checkpoint_warning"]
        for warning in warnings:
            assert set(warning) >= {"field", "message"}

    anyio.run(scenario)


def test_each_bad_field_is_dropped_on_its_own_with_a_warning() -> None:
    warned: list[str] = []
    parsed = parse_checkpoint(
        {
            "version": 1,
            "runId": "run_1",
            "step": "three",
            "phase": "turn",
            "pendingToolCalls": [{"id": "c1", "name": "t", "arguments": {}}, {"id": 3}],
            "steering": "not a list",
            "followUps": [],
            "sessionState": {"model": "gpt", "attentionSticky": {"thinking": ["k"]}},
        },
        lambda field, why: warned.append(field),
    )
    assert parsed.run_id == "run_1" and parsed.phase == "turn" and parsed.step == 0
    assert [c["id"] for c in parsed.pending_tool_calls] == ["c1"]
    assert parsed.steering == [] and parsed.model is None
    assert parsed.attention_sticky == {"thinking": ["k"]}
    assert warned == ["step", "pendingToolCalls", "steering", "sessionState.model"]


async def test_concurrent_tool_calls_each_store_their_result_with_a_checkpoint() -> None:
    def two_calls(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta("done"), provider_done()]
        return [
            provider_tool_call("a", "echo", {"n": 1}),
            provider_tool_call("b", "echo", {"n": 2}),
            provider_done(),
        ]

    agent = make_agent(
        two_calls,
        tools=[define_tool("echo", lambda a, c: a, idempotent=True)],
        tool_concurrency=2,
        durable=True,
    )
    session = agent.create_session()
    result = await session.run("go")
    entries = await session.entries()
    found = checkpoints(entries)
    assert [c["phase"] for c in found] == ["input", "turn", "tool", "tool", "end"]
    assert sorted(c["id"] for c in found[1]["pendingToolCalls"]) == ["a", "b"]
    assert "pendingToolCalls" not in found[3]  # both answered
    answered = [m["content"][0]["toolCallId"] for m in result.messages if m["role"] == "tool"]
    assert sorted(answered) == ["a", "b"]
    assert await session.resume() is None


async def test_a_durable_run_returns_structured_output_and_checkpoints_the_correction() -> None:
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        celsius: float

    provider = create_mock_provider(
        [
            [provider_text_delta("not json"), provider_done()],
            [
                provider_tool_call("c1", "final_result", {"city": "Oslo", "celsius": 4.5}),
                provider_done(),
            ],
        ]
    )
    agent = create_agent(model=MODEL, provider=provider, durable=True)
    session = agent.create_session()
    result = await session.run("Weather?", output_type=Weather, output_mode="tool")
    assert result.output == Weather(city="Oslo", celsius=4.5)
    phases = [c["phase"] for c in checkpoints(await session.entries())]
    # input, the text answer, its correction (an input step), the
    # final_result turn (its result known at once), then the end.
    assert phases == ["input", "turn", "input", "turn", "end"]
    assert await session.resume() is None
