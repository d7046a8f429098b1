"""Session behaviour: busy runs, abort, steer/follow-up, atomicity, streaming."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import pytest
from runtime_helpers import MODEL, kinds, make_agent, record, roles, stored_roles

from prism.branching import rebuild_session_context
from prism.errors import (
    ConfigError,
    MaxToolRoundsError,
    NoActiveRunError,
    ProviderError,
    RunAbortedError,
    SessionBusyError,
)
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
    provider_tool_call_delta,
)
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]


def tool_turn(call_id: str = "c1", name: str = "echo") -> list[Any]:
    return [provider_tool_call(call_id, name, {"n": call_id}), provider_done()]


async def test_second_run_fails_at_once_and_session_stays_usable() -> None:
    gate = anyio.Event()

    async def script(request: Any) -> Any:
        async def events() -> Any:
            await gate.wait()
            yield provider_text_delta("ok")
            yield provider_done()

        return events()

    agent = make_agent(script)
    session = agent.create_session()
    async with anyio.create_task_group() as group:
        group.start_soon(session.run, "first")
        await anyio.wait_all_tasks_blocked()
        assert session.is_running
        with pytest.raises(SessionBusyError, match="Agent session already has an active run"):
            await session.run("second")
        with pytest.raises(SessionBusyError, match="already has an active run"):
            await session.compact()
        gate.set()
    assert not session.is_running
    assert await stored_roles(session) == ["user", "assistant"]
    result = await session.run("third")
    assert result.text == "ok"


async def test_abort_during_tool_leaves_no_orphan_tool_call() -> None:
    started = anyio.Event()

    async def hang(args: dict[str, Any], ctx: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = make_agent([tool_turn("c1", "hang"), FINAL], tools=[define_tool("hang", hang)])
    session = agent.create_session()
    events = record(session)
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await session.run("go")
        except RunAbortedError as error:
            failures.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await started.wait()
        assert session.abort() is True
    assert len(failures) == 1 and failures[0].code == "aborted"
    assert kinds(events)[-2:] == ["tool_call:hang", "error"]
    # Only the input landed: the assistant tool_call waits for its result.
    assert await stored_roles(session) == ["user"]
    assert session.abort() is False
    # The provider's next scripted turn is a plain answer: the session is usable.
    assert (await session.run("again")).text == "done"
    assert await stored_roles(session) == ["user", "user", "assistant"]


async def test_abort_without_run_is_a_no_op() -> None:
    session = make_agent(FINAL).create_session()
    assert session.abort("nothing") is False


async def test_steer_is_injected_before_next_provider_turn() -> None:
    provider = create_mock_provider([tool_turn("c1"), FINAL])
    agent = make_agent(None, provider=provider)
    session = agent.create_session()

    def steer_on_tool_call(event: dict[str, Any]) -> None:
        if event["type"] == "tool_call":
            session.steer("also check the tests")

    session.subscribe(steer_on_tool_call)
    result = await session.run("fix the bug")
    second_request = provider.requests[1]["messages"]
    assert roles(second_request) == ["user", "assistant", "tool", "user"]
    assert second_request[-1]["content"][0]["text"] == "also check the tests"
    assert roles(result.messages) == ["user", "assistant", "tool", "user", "assistant"]


async def test_steer_after_final_answer_continues_the_run() -> None:
    provider = create_mock_provider([FINAL, [provider_text_delta("steered"), provider_done()]])
    session = make_agent(None, provider=provider).create_session()

    def steer_once(event: dict[str, Any]) -> None:
        if event["type"] == "message_finished" and provider.turns == 1:
            session.steer("one more thing")

    session.subscribe(steer_once)
    result = await session.run("hi")
    assert result.text == "steered"
    assert await stored_roles(session) == ["user", "assistant", "user", "assistant"]


async def test_follow_up_runs_after_the_run_would_finish() -> None:
    provider = create_mock_provider(
        [tool_turn("c1"), FINAL, [provider_text_delta("second"), provider_done()]]
    )
    session = make_agent(None, provider=provider).create_session()
    events = record(session)

    def queue_follow_up(event: dict[str, Any]) -> None:
        if event["type"] == "tool_call":
            session.follow_up("and then summarize")

    session.subscribe(queue_follow_up)
    result = await session.run("start")
    # The follow-up waited for the tool round *and* the final answer.
    assert roles(provider.requests[1]["messages"]) == ["user", "assistant", "tool"]
    assert roles(provider.requests[2]["messages"]) == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert result.text == "second"
    assert kinds(events).count("run_started") == 1
    assert kinds(events).count("run_finished") == 1


async def test_steer_and_follow_up_need_an_active_run() -> None:
    session = make_agent(FINAL).create_session()
    with pytest.raises(NoActiveRunError, match="no active run"):
        session.steer("x")
    with pytest.raises(NoActiveRunError, match="no active run"):
        session.follow_up("x")
    late: list[BaseException] = []

    def on_finished(event: dict[str, Any]) -> None:
        if event["type"] == "run_finished":
            try:
                session.follow_up("too late")
            except NoActiveRunError as error:
                late.append(error)

    session.subscribe(on_finished)
    await session.run("hi")
    assert len(late) == 1


async def test_max_tool_rounds_answers_extra_calls_with_errors_and_fails() -> None:
    executed: list[str] = []
    agent = make_agent(
        [tool_turn("c1"), tool_turn("c2"), FINAL],
        tools=[define_tool("echo", lambda a, c: executed.append(a["n"]))],
        max_tool_rounds=1,
    )
    session = agent.create_session()
    events = record(session)
    with pytest.raises(MaxToolRoundsError, match=r"max_tool_rounds \(1\)"):
        await session.run("loop")
    assert executed == ["c1"]
    assert kinds(events)[-3:] == ["message_finished", "tool_result:echo!", "error"]
    assert events[-1]["error"]["code"] == "max_tool_rounds"
    # History stays valid: every tool call has its result.
    assert await stored_roles(session) == ["user", "assistant", "tool", "assistant", "tool"]


async def test_streamed_tool_call_deltas_are_joined_by_index() -> None:
    agent = make_agent(
        [
            [
                provider_tool_call_delta(0, id="c1", name="echo", arguments_delta='{"a":'),
                provider_tool_call_delta(1, id="c2", name="echo", arguments_delta="{}"),
                provider_tool_call_delta(0, arguments_delta=" 1}"),
                provider_done(),
            ],
            FINAL,
        ]
    )
    session = agent.create_session()
    events = record(session)
    await session.run("go")
    calls = [e["toolCall"] for e in events if e["type"] == "tool_call"]
    assert calls == [
        {"id": "c1", "name": "echo", "arguments": {"a": 1}},
        {"id": "c2", "name": "echo", "arguments": {}},
    ]


async def test_streamed_call_closed_by_its_complete_form_runs_once() -> None:
    agent = make_agent(
        [
            [
                provider_tool_call_delta(0, id="c1", name="echo", arguments_delta='{"a":'),
                provider_tool_call_delta(0, arguments_delta=" 1}"),
                provider_tool_call("c1", "echo", {"a": 1}),
                provider_done(),
            ],
            FINAL,
        ]
    )
    session = agent.create_session()
    events = record(session)
    await session.run("go")
    assert kinds(events).count("tool_call:echo") == 1
    assert kinds(events).count("tool_result:echo") == 1
    assistant = next(m for m in await session.messages() if m["role"] == "assistant")
    assert [b["type"] for b in assistant["content"]] == ["tool_call"]


async def test_invalid_streamed_arguments_become_an_error_result_not_a_call() -> None:
    executed: list[Any] = []
    agent = make_agent(
        [
            [
                provider_tool_call_delta(0, id="c1", name="echo", arguments_delta="{oops"),
                provider_done(),
            ],
            FINAL,
        ],
        tools=[define_tool("echo", lambda a, c: executed.append(a))],
    )
    session = agent.create_session()
    events = record(session)
    await session.run("go")
    result = next(e["result"] for e in events if e["type"] == "tool_result")
    assert result["isError"] and result["value"]["code"] == "invalid_arguments"
    assert "not valid JSON" in result["value"]["message"]
    assert executed == []


async def test_provider_exception_is_an_error_with_code() -> None:
    agent = make_agent([provider_text_delta("x"), RuntimeError("socket closed")])
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError, match="socket closed"):
        await session.run("hi")
    assert events[-1]["error"]["code"] == "provider_exception"
    assert await stored_roles(session) == ["user"]


async def test_failure_after_output_is_not_retried() -> None:
    from prism.providers import provider_error

    agent = make_agent(
        [[provider_text_delta("par"), provider_error("reset", "ECONNRESET")], FINAL], retry=True
    )
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError):
        await session.run("hi")
    assert "retry_scheduled" not in kinds(events)


async def test_retry_false_per_run_and_middleware_can_stop_retry() -> None:
    from prism.middleware import create_middleware_registry
    from prism.providers import provider_error
    from prism.retry import RetryDecision

    async def no_sleep(_: float) -> None:
        return None

    agent = make_agent([[provider_error("busy", "503")], FINAL], retry=True, sleep=no_sleep)
    session = agent.create_session()
    with pytest.raises(ProviderError):
        await session.run("hi", retry=False)

    seen: list[Any] = []
    middleware = create_middleware_registry()

    def stop(payload: Any, next_: Any) -> Any:
        seen.append(payload)
        return {**payload, "decision": RetryDecision(False, 0, "host said no")}

    middleware.use("retry", stop)
    agent = make_agent(
        [[provider_error("busy", "503")], FINAL], retry=True, middleware=middleware, sleep=no_sleep
    )
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError):
        await session.run("hi")
    assert "retry_scheduled" not in kinds(events)
    assert seen and seen[0]["context"].attempt == 1 and seen[0]["decision"].retry


async def test_listener_that_raises_does_not_break_the_run() -> None:
    session = make_agent(FINAL).create_session()

    def broken(event: dict[str, Any]) -> None:
        if event["type"] == "message_started":
            raise RuntimeError("listener bug")

    session.subscribe(broken)
    events = record(session)
    result = await session.run("hi")
    assert result.text == "done"
    errors = [e for e in events if e["type"] == "extension_error"]
    assert len(errors) == 1
    assert errors[0]["error"]["message"] == "listener bug"
    assert errors[0]["source"] == "listener"


async def test_unsubscribe_stops_delivery() -> None:
    session = make_agent(FINAL).create_session()
    events: list[Any] = []
    unsubscribe = session.subscribe(events.append)
    unsubscribe()
    unsubscribe()
    await session.run("hi")
    assert events == []


async def test_stream_yields_the_run_events_and_ends_after_error() -> None:
    session = make_agent(FINAL).create_session()
    seen = [event["type"] async for event in session.stream("hi")]
    assert seen == [
        "run_started",
        "message_started",
        "message_delta",
        "message_finished",
        "run_finished",
    ]

    from prism.providers import provider_error

    session = make_agent([provider_error("nope", "bad")]).create_session()
    seen = [event["type"] async for event in session.stream("hi")]
    assert seen == ["run_started", "error"]


async def test_stream_busy_session_raises() -> None:
    gate = anyio.Event()

    async def script(request: Any) -> Any:
        await gate.wait()
        return FINAL

    session = make_agent(script).create_session()
    async with anyio.create_task_group() as group:
        group.start_soon(session.run, "first")
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(SessionBusyError):
            async with aclosing(session.stream("second")) as events:
                async for _ in events:
                    pass
        gate.set()


async def test_breaking_out_of_stream_aborts_the_run() -> None:
    session = make_agent(
        [provider_text_delta("a"), provider_text_delta("b"), provider_done()]
    ).create_session()
    observed = record(session)
    async with aclosing(session.stream("hi")) as events:
        async for event in events:
            if event["type"] == "message_delta":
                break
    assert not session.is_running
    assert observed[-1]["type"] == "error" and observed[-1]["error"]["code"] == "aborted"
    assert (await session.run("again")).text == "ab"


async def test_bad_input_and_options_append_nothing() -> None:
    session = make_agent(FINAL).create_session()
    for bad in (
        "",
        [],
        {"role": "robot", "content": []},
        {"role": ["user"], "content": []},  # unhashable: still a ConfigError
        42,
        [{"role": "user", "content": "x"}],
    ):
        with pytest.raises(ConfigError, match="input"):
            await session.run(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"run option model\.provider"):
        await session.run("hi", model={"model": "x"})  # type: ignore[typeddict-item]
    with pytest.raises(ConfigError, match="max_tool_rounds must be an int >= 0"):
        await session.run("hi", max_tool_rounds=-1)
    with pytest.raises(ConfigError, match="unknown retry option"):
        await session.run("hi", retry={"maxAttempt": 2})
    assert await session.entries() == []
    assert not session.is_running


async def test_message_input_and_run_model_override() -> None:
    provider = create_mock_provider(FINAL)
    session = make_agent(None, provider=provider).create_session()
    message = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    await session.run([message], model={"provider": "mock", "model": "big"}, system="be brief")
    request = provider.requests[0]
    assert request["model"] == {"provider": "mock", "model": "big"}
    assert request["messages"][0]["role"] == "system"
    assert "be brief" in request["messages"][0]["content"][0]["text"]
    assert request["messages"][-1]["content"][0]["text"] == "hello"


async def test_set_model_appends_entry_and_changes_later_turns() -> None:
    provider = create_mock_provider(FINAL)
    session = make_agent(None, provider=provider).create_session()
    events = record(session)
    entry = await session.set_model({"provider": "mock", "model": "other"})
    assert entry["kind"] == "model_change" and entry["parentId"] is None
    assert kinds(events) == ["model_changed"]
    assert events[0]["model"] == {"provider": "mock", "model": "other"}
    await session.run("hi")
    assert provider.requests[0]["model"]["model"] == "other"
    assert (await session.state())["model"]["model"] == "other"
    with pytest.raises(ConfigError, match=r"model\.model must be a non-empty string"):
        await session.set_model({"provider": "mock"})  # type: ignore[typeddict-item]
    assert len(await session.entries()) == 3


async def test_cached_context_matches_a_rebuild_from_the_store() -> None:
    agent = make_agent([tool_turn("c1"), FINAL, tool_turn("c2"), FINAL])
    session = agent.create_session()
    await session.run("one")
    await session.set_model(MODEL)  # type: ignore[arg-type]
    await session.run("two")
    rebuilt = rebuild_session_context(await session.entries())
    assert await session.messages() == rebuilt.messages
    assert await session.branch_entries() == rebuilt.entries
    assert session.leaf_id == rebuilt.leaf_id
    entries = await session.entries()
    assert [e["parentId"] for e in entries[1:]] == [e["id"] for e in entries[:-1]]


async def test_state_is_json_ready() -> None:
    import json

    session = make_agent([tool_turn("c1"), FINAL]).create_session("s9")
    assert await session.state() == {
        "sessionId": "s9",
        "leafId": None,
        "model": MODEL,
        "isRunning": False,
        "runId": None,
        "entryCount": 0,
        "messageCount": 0,
    }
    await session.run("hi")
    state = await session.state()
    json.dumps(state)
    assert state["entryCount"] == 4 and state["messageCount"] == 4
    assert state["leafId"] == session.leaf_id


class _SlowStore:
    """Memory store whose batch of 2+ entries blocks after writing until released."""

    def __init__(self) -> None:
        from prism.stores import create_memory_session_store

        self.inner = create_memory_session_store()
        self.blocked = anyio.Event()
        self.release = anyio.Event()

    async def append(self, entry: Any) -> None:
        await self.inner.append(entry)

    async def append_many(self, entries: Any) -> None:
        await self.inner.append_many(entries)
        if len(entries) > 1:
            self.blocked.set()
            await self.release.wait()

    async def list(self, session_id: str) -> Any:
        return await self.inner.list(session_id)

    async def get(self, entry_id: str) -> Any:
        return await self.inner.get(entry_id)

    async def list_sessions(self) -> Any:
        return await self.inner.list_sessions()


async def test_abort_during_a_store_write_keeps_cache_and_store_in_step() -> None:
    store = _SlowStore()
    session = make_agent([tool_turn("c1"), FINAL], store=store).create_session()
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await session.run("go")
        except RunAbortedError as error:
            failures.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await store.blocked.wait()
        session.abort()
        store.release.set()
    assert len(failures) == 1
    stored = await store.list(session.id)
    assert [e["message"]["role"] for e in stored] == ["user", "assistant", "tool"]
    assert session.leaf_id == stored[-1]["id"]
    assert await session.messages() == [e["message"] for e in stored]


async def test_stream_with_bad_input_raises_and_writes_nothing() -> None:
    session = make_agent(FINAL).create_session()
    with pytest.raises(ConfigError, match="input"):
        async for _ in session.stream(""):
            pass
    with pytest.raises(ConfigError, match="max_tool_rounds"):
        async for _ in session.stream("hi", max_tool_rounds=-2):
            pass
    assert not session.is_running
    assert await session.entries() == []


class _IteratorProvider:
    """A provider whose generate returns a plain async iterator (no aclose)."""

    name = "plain"

    def generate(self, request: Any) -> Any:
        events = iter([provider_text_delta("plain"), provider_done()])

        class _It:
            def __aiter__(self) -> Any:
                return self

            async def __anext__(self) -> Any:
                try:
                    return next(events)
                except StopIteration:
                    raise StopAsyncIteration from None

        return _It()


async def test_provider_returning_a_plain_async_iterator() -> None:
    session = make_agent(None, provider=_IteratorProvider()).create_session()
    assert (await session.run("hi")).text == "plain"
