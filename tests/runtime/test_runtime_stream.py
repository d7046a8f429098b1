"""``session.stream`` is safe to abandon: break, raise, drop or leave the
``async with`` block early, and the session runs again at once."""

from __future__ import annotations

import gc
from typing import Any

import anyio
import pytest
from runtime_helpers import make_agent, record

from prism.errors import ConfigError, RunAbortedError
from prism.providers import provider_done, provider_text_delta
from prism.runtime import AgentSession, RunResult

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]


def stalling_session() -> tuple[AgentSession, anyio.Event]:
    """First run: one delta, then waits on the gate; later runs answer at once."""
    gate = anyio.Event()
    calls = 0

    async def script(request: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1:
            return FINAL

        async def events() -> Any:
            yield provider_text_delta("partial")
            await gate.wait()
            yield provider_done()

        return events()

    return make_agent(script).create_session(), gate


async def wait_for_abort(events: list[dict[str, Any]]) -> dict[str, Any]:
    with anyio.fail_after(5):
        while not any(e["type"] == "error" for e in events):
            await anyio.sleep(0)
    return next(e for e in events if e["type"] == "error")


async def test_break_frees_the_session_at_once() -> None:
    session, _gate = stalling_session()
    observed = record(session)
    async for event in session.stream("hi"):
        if event["type"] == "message_delta":
            break
    assert not session.is_running  # no aclosing needed
    assert (await session.run("again")).text == "done"
    error = await wait_for_abort(observed)
    assert error["error"]["code"] == "aborted"
    assert error["error"]["details"] == {"reason": "stream closed"}


async def test_an_exception_in_the_loop_body_frees_the_session() -> None:
    session, _gate = stalling_session()
    with pytest.raises(LookupError):
        async for event in session.stream("hi"):
            if event["type"] == "message_delta":
                raise LookupError("consumer failed")
    assert not session.is_running
    assert (await session.run("again")).text == "done"


async def test_a_dropped_iterator_is_aborted_when_collected() -> None:
    session, _gate = stalling_session()
    observed = record(session)
    events = session.stream("hi")
    assert (await events.__anext__())["type"] == "run_started"
    assert session.is_running
    del events
    gc.collect()
    assert not session.is_running
    assert (await session.run("again")).text == "done"
    assert (await wait_for_abort(observed))["error"]["code"] == "aborted"
    # The aborted run stored its input only; the next run is intact after it.
    assert [m["role"] for m in await session.messages()] == ["user", "user", "assistant"]


async def test_async_with_gives_the_result() -> None:
    session = make_agent(FINAL).create_session()
    async with session.stream("hi") as events:
        kinds = [event["type"] async for event in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert isinstance(events.result, RunResult)
    assert events.result.text == "done"
    assert events.error is None and events.finished


async def test_leaving_async_with_early_aborts_and_waits_for_the_run() -> None:
    session, _gate = stalling_session()
    async with session.stream("hi") as events:
        async for event in events:
            if event["type"] == "message_delta":
                break
    # aclose waited: the run has wound down, not just been told to stop.
    assert events.finished
    assert isinstance(events.error, RunAbortedError)
    assert events.result is None
    assert not session.is_running
    assert (await session.run("again")).text == "done"


async def test_stream_refuses_bad_input_on_entering() -> None:
    session = make_agent(FINAL).create_session()
    with pytest.raises(ConfigError, match="input"):
        async with session.stream(""):
            pass
    assert not session.is_running


def test_break_under_trio_shuts_down_cleanly() -> None:
    async def main() -> str:
        session, _gate = stalling_session()
        async for event in session.stream("hi"):
            if event["type"] == "message_delta":
                break
        assert not session.is_running
        return (await session.run("again")).text

    assert anyio.run(main, backend="trio") == "done"
