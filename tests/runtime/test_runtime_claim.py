"""A run is claimed atomically (abort/steer work from its first instant), and
a failing host middleware becomes a redacted ``extension_error`` event."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runtime_helpers import make_agent, record

from prism.errors import NoActiveRunError, RunAbortedError, UnknownNameError
from prism.middleware import create_middleware_registry
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.stores import MemorySessionStore

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]
SECRET = "sk-claim-test-0123456789abcdef"


class _GatedStore(MemorySessionStore):
    """A real memory store whose first ``list`` (the session load) waits for
    ``release``: the run is claimed but has not started yet."""

    def __init__(self) -> None:
        super().__init__()
        self.loading = anyio.Event()
        self.release = anyio.Event()

    async def list(self, session_id: str) -> Any:
        self.loading.set()
        await self.release.wait()
        return await super().list(session_id)


async def test_abort_in_the_first_instant_of_a_run_is_not_lost() -> None:
    store = _GatedStore()
    session = make_agent(FINAL, store=store).create_session("s")
    events = record(session)
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await session.run("hi")
        except RunAbortedError as error:
            failures.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await store.loading.wait()  # claimed, still loading the session
        assert session.is_running
        assert session.abort("too early") is True
        store.release.set()
    assert len(failures) == 1
    assert not session.is_running
    assert await session.entries() == []  # nothing of the aborted run was stored
    assert events == []  # it never started, so it has nothing to report
    assert (await session.run("again")).text == "done"


async def test_steer_in_the_first_instant_reaches_the_first_turn() -> None:
    store = _GatedStore()
    provider = create_mock_provider(FINAL)
    session = make_agent(None, provider=provider, store=store).create_session("s")

    async with anyio.create_task_group() as group:
        group.start_soon(session.run, "one")
        await store.loading.wait()
        session.steer("two")
        session.follow_up("three")
        store.release.set()
    # One request carried the input and the steer; the follow-up ran after it.
    first = [m["content"][0]["text"] for m in provider.requests[0]["messages"]]
    assert first == ["one", "two"]
    assert len(provider.requests) == 2
    with pytest.raises(NoActiveRunError):
        session.steer("late")


async def test_abort_right_after_a_stream_is_entered() -> None:
    session = make_agent(FINAL).create_session()
    async with session.stream("hi") as events:
        assert session.abort("stop") is True
        seen = [event async for event in events]
    assert isinstance(events.error, RunAbortedError)
    assert events.result is None
    if seen:  # it may have been cancelled before or after run_started
        assert seen[-1]["type"] == "error"
        assert seen[-1]["error"]["details"] == {"reason": "stop"}
    assert not session.is_running
    assert await session.entries() == []


async def test_failing_host_middleware_becomes_a_redacted_extension_error() -> None:
    middleware = create_middleware_registry()
    host_saw: list[str] = []
    middleware.on_error = lambda hook, error: host_saw.append(hook)

    def broken(request: Any, next: Any) -> Any:
        raise RuntimeError(f"cannot reach {SECRET}")

    middleware.use("provider_request", broken)
    middleware.use("session_start", broken)
    session = make_agent(FINAL, middleware=middleware, secrets=[SECRET]).create_session("s")
    events = record(session)

    result = await session.run("hi")

    assert result.text == "done"  # "event" policy: the chain went on without it
    errors = [e for e in events if e["type"] == "extension_error"]
    assert [(e["source"], e["hook"]) for e in errors] == [
        ("middleware", "session_start"),
        ("middleware", "provider_request"),
    ]
    assert "runId" not in errors[0]  # the load is not part of a run's events
    assert errors[1]["runId"] == result.run_id
    assert errors[1]["error"]["code"] == "middleware_error"
    assert "cannot reach" in errors[1]["error"]["message"]
    assert SECRET not in repr(events)
    assert host_saw == ["session_start", "provider_request"]  # the host's callback still runs


async def test_middleware_failures_outside_a_session_are_not_reported_to_it() -> None:
    middleware = create_middleware_registry()
    middleware.use("tool_call", lambda value, next: 1 / 0)  # the run calls no tool
    session = make_agent(FINAL, middleware=middleware).create_session()
    events = record(session)
    await middleware.run("tool_call", {})  # the host calling its registry directly
    await session.run("hi")
    assert [e for e in events if e["type"] == "extension_error"] == []


async def test_open_session_must_exist() -> None:
    agent = make_agent(FINAL)
    with pytest.raises(UnknownNameError, match="unknown session id 'nope'"):
        await agent.open_session("nope", must_exist=True)
    assert await agent.store.list("nope") == []  # nothing was created
    await agent.create_session("real").run("hi")
    opened = await agent.open_session("real", must_exist=True)
    assert len(await opened.messages()) == 2
    fresh = await agent.open_session("new")  # the default still starts a new one
    assert fresh.leaf_id is None
