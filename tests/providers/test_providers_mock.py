from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from prism.contracts import ProviderEvent, ProviderRequest
from prism.errors import ConfigError
from prism.providers import (
    AIProvider,
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call,
)

REQUEST: ProviderRequest = {
    "model": {"provider": "mock", "model": "demo"},
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
}


async def collect(provider: AIProvider, request: ProviderRequest = REQUEST) -> list[ProviderEvent]:
    return [event async for event in provider.generate(request)]


def test_mock_is_an_ai_provider() -> None:
    provider = create_mock_provider([provider_done()])
    assert isinstance(provider, AIProvider)
    assert provider.name == "mock"
    assert create_mock_provider([provider_done()], name="other").name == "other"


@pytest.mark.anyio
async def test_flat_script_replays_every_turn() -> None:
    provider = create_mock_provider([provider_text_delta("Hello"), provider_done()])
    first = await collect(provider)
    second = await collect(provider)
    assert first == second == [{"type": "content_delta", "text": "Hello"}, {"type": "done"}]
    assert provider.turns == 2


@pytest.mark.anyio
async def test_per_turn_script_then_clear_exhaustion_error() -> None:
    provider = create_mock_provider(
        [
            [provider_tool_call("c1", "lookup", {"q": 1}), provider_done("tool_calls")],
            [provider_text_delta("done"), provider_done()],
        ]
    )
    assert (await collect(provider))[0]["type"] == "tool_call"
    assert (await collect(provider))[0] == {"type": "content_delta", "text": "done"}
    exhausted = await collect(provider)
    assert len(exhausted) == 1 and exhausted[0]["type"] == "error"
    error = exhausted[0]["error"]  # type: ignore[typeddict-item]
    assert error["code"] == "mock_script_exhausted"
    assert "2 turn(s) scripted, turn 3 requested" in error["message"]


@pytest.mark.anyio
async def test_requests_are_deep_copied() -> None:
    provider = create_mock_provider([provider_done()])
    request: Any = {
        "model": {"provider": "mock", "model": "demo"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
    }
    await collect(provider, request)
    request["messages"][0]["content"][0]["text"] = "changed"
    assert provider.requests[0]["messages"][0]["content"][0]["text"] == "a"  # type: ignore[typeddict-item]


@pytest.mark.anyio
async def test_yielded_events_are_copies_of_the_script() -> None:
    script = [provider_tool_call("c1", "t", {"x": 1}), provider_done()]
    provider = create_mock_provider(script)
    events = await collect(provider)
    events[0]["toolCall"]["arguments"]["x"] = 99  # type: ignore[typeddict-item]
    again = await collect(provider)
    assert again[0]["toolCall"]["arguments"] == {"x": 1}  # type: ignore[typeddict-item]


@pytest.mark.anyio
async def test_sync_function_script_sees_request() -> None:
    def model(request: ProviderRequest) -> list[ProviderEvent]:
        count = len(request["messages"])
        return [provider_text_delta(f"{count} message(s)"), provider_done()]

    provider = create_mock_provider(model)
    events = await collect(provider)
    assert events[0] == {"type": "content_delta", "text": "1 message(s)"}


@pytest.mark.anyio
async def test_async_function_and_async_iterable_scripts() -> None:
    async def coroutine_model(request: ProviderRequest) -> list[ProviderEvent]:
        return [provider_text_delta("a"), provider_done()]

    async def generator_model(request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        yield provider_text_delta("b")
        yield provider_done()

    assert (await collect(create_mock_provider(coroutine_model)))[0]["text"] == "a"  # type: ignore[typeddict-item]
    assert (await collect(create_mock_provider(generator_model)))[0]["text"] == "b"  # type: ignore[typeddict-item]


@pytest.mark.anyio
async def test_exception_in_script_is_raised_mid_stream() -> None:
    provider = create_mock_provider([provider_text_delta("partial"), RuntimeError("boom")])
    seen: list[ProviderEvent] = []
    with pytest.raises(RuntimeError, match="boom"):
        async for event in provider.generate(REQUEST):
            seen.append(event)
    assert seen == [{"type": "content_delta", "text": "partial"}]


@pytest.mark.anyio
async def test_error_event_passes_through() -> None:
    provider = create_mock_provider([provider_error("overloaded", "503", status=503)])
    events = await collect(provider)
    assert events == [
        {"type": "error", "error": {"message": "overloaded", "code": "503", "status": 503}}
    ]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([], "script is empty"),
        ("done", "must be a list of events"),
        ({"type": "done"}, "must be a list of events"),
        (42, "must be a list of events"),
        ([provider_done(), [provider_done()]], "mixes events and lists"),
        ([[provider_done()], []], "turn 2 is empty"),
        ([{"type": "nope"}], "event 1: provider event has unknown type 'nope'"),
        ([{"type": "content_delta"}], "content_delta event needs a string 'text'"),
        ([[provider_done()], [{"type": "tool_call", "toolCall": {"id": "x"}}]], "turn 2, event 1"),
        (["text"], "provider event must be a dict"),
    ],
)
def test_bad_static_scripts_fail_at_construction(script: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_mock_provider(script)


@pytest.mark.parametrize("delay", [-1, float("nan"), "1", True])
def test_bad_delay_rejected(delay: Any) -> None:
    with pytest.raises(ConfigError, match="delay_ms"):
        create_mock_provider([provider_done()], delay_ms=delay)


def test_bad_name_rejected() -> None:
    with pytest.raises(ConfigError, match="name"):
        create_mock_provider([provider_done()], name="")


@pytest.mark.anyio
async def test_function_returning_garbage_fails_clearly() -> None:
    provider = create_mock_provider(lambda request: 42)
    with pytest.raises(ConfigError, match="turn 1: script function must return events"):
        await collect(provider)
    bad_event = create_mock_provider(lambda request: [{"type": "usage", "usage": {"bogus": 1}}])
    with pytest.raises(ConfigError, match="turn 1: unknown usage field 'bogus'"):
        await collect(bad_event)


@pytest.mark.anyio
async def test_cancellation_stops_a_zero_delay_stream() -> None:
    provider = create_mock_provider([provider_text_delta(str(i)) for i in range(100)])
    seen: list[ProviderEvent] = []
    with anyio.CancelScope() as scope:
        async for event in provider.generate(REQUEST):
            seen.append(event)
            if len(seen) == 3:
                scope.cancel()
    assert scope.cancelled_caught
    assert len(seen) == 3
    assert len(provider.requests) == 1


@pytest.mark.anyio
async def test_delay_is_spent_in_anyio_sleep_and_cancellable() -> None:
    # A long delay proves cancellation interrupts the sleep itself.
    provider = create_mock_provider([provider_text_delta("x"), provider_done()], delay_ms=60_000)
    started = anyio.Event()
    seen: list[ProviderEvent] = []

    async def consume() -> None:
        started.set()
        async for event in provider.generate(REQUEST):
            seen.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await started.wait()
        await anyio.lowlevel.checkpoint()
        group.cancel_scope.cancel()
    assert seen == []
    assert len(provider.requests) == 1


@pytest.mark.anyio
async def test_the_request_record_is_bounded_by_default_and_can_be_off_or_all() -> None:
    from prism.providers.mock import DEFAULT_RECORD

    def request(n: int) -> Any:
        return {
            "model": {"provider": "mock", "model": "demo"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": str(n)}]}],
        }

    turns = DEFAULT_RECORD + 25
    bounded = create_mock_provider([provider_done()])
    kept_all = create_mock_provider([provider_done()], record=True)
    off = create_mock_provider([provider_done()], record=False)
    last_three = create_mock_provider([provider_done()], record=3)
    for n in range(turns):
        for provider in (bounded, kept_all, off, last_three):
            await collect(provider, request(n))
    assert len(bounded.requests) == DEFAULT_RECORD and bounded.turns == turns
    assert bounded.requests[0]["messages"][0]["content"][0]["text"] == "25"  # type: ignore[typeddict-item]
    assert len(kept_all.requests) == turns
    assert off.requests == [] and off.turns == turns
    texts = [r["messages"][0]["content"][0]["text"] for r in last_three.requests]  # type: ignore[typeddict-item]
    assert texts == [str(turns - 3), str(turns - 2), str(turns - 1)]


def test_a_bad_record_bound_is_a_config_error() -> None:
    for bad in (-1, 1.5, "10", None):
        with pytest.raises(ConfigError, match="record must be True, False or an int >= 0"):
            create_mock_provider([provider_done()], record=bad)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_function_model_still_gets_its_own_copy_with_record_off() -> None:
    seen: list[Any] = []

    def model(request: Any) -> list[Any]:
        request["messages"].clear()  # a careless function model
        seen.append(request)
        return [provider_done()]

    provider = create_mock_provider(model, record=False)
    original: Any = {
        "model": {"provider": "mock", "model": "demo"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
    }
    await collect(provider, original)
    assert len(original["messages"]) == 1 and seen and provider.requests == []
