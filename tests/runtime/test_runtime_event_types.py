"""The typed event contract matches what the runtime really emits.

``prism.contracts.AgentEvent`` is a union of per-type TypedDicts. Every
event emitted while the event-order, attention and session scenarios run is
checked against the TypedDict its ``type`` names: no key outside it, every
required key present, and ``sessionId`` always stamped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any, Literal, NotRequired, get_args, get_origin, get_type_hints

import pytest
import test_runtime_attention
import test_runtime_checkpoints
import test_runtime_event_order
import test_runtime_session

from prism.contracts import AgentEvent, AgentEventType
from prism.middleware import HOOK_NAMES, MiddlewarePayloads
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.runtime.events import EventHub
from prism.stores import create_memory_session_store

pytestmark = pytest.mark.anyio

MODULES: tuple[ModuleType, ...] = (
    test_runtime_event_order,
    test_runtime_attention,
    test_runtime_session,
    test_runtime_checkpoints,
)


def _event_classes() -> dict[str, type]:
    by_type: dict[str, type] = {}
    for cls in get_args(AgentEvent):
        (literal,) = get_args(get_type_hints(cls)["type"])
        by_type[literal] = cls
    return by_type


EVENT_CLASSES = _event_classes()


def _scenarios() -> list[Any]:
    found = []
    for module in MODULES:
        for name, fn in vars(module).items():
            if (
                name.startswith("test_")
                and inspect.iscoroutinefunction(fn)
                and not inspect.signature(fn).parameters
                and not hasattr(fn, "pytestmark")
            ):
                found.append(pytest.param(fn, id=f"{module.__name__}.{name}"))
    return found


def test_the_union_has_one_typeddict_per_event_type() -> None:
    assert sorted(EVENT_CLASSES) == sorted(get_args(AgentEventType))


def test_every_middleware_hook_has_a_payload_type() -> None:
    assert set(MiddlewarePayloads.__annotations__) == HOOK_NAMES


def _check(event: dict[str, Any]) -> None:
    cls = EVENT_CLASSES.get(event.get("type"))  # type: ignore[arg-type]
    assert cls is not None, f"event type {event.get('type')!r} is not in AgentEvent"
    keys = set(event)
    # Read NotRequired from the hints: with postponed annotations Python 3.11
    # does not fill ``__required_keys__`` correctly.
    extras = get_type_hints(cls, include_extras=True)
    required = {key for key, hint in extras.items() if get_origin(hint) is not NotRequired}
    assert keys <= set(extras), f"{cls.__name__}: undeclared keys {sorted(keys - set(extras))}"
    missing = required - keys
    assert not missing, f"{cls.__name__}: missing keys {sorted(missing)}"
    assert isinstance(event.get("sessionId"), str)
    hints = get_type_hints(cls)
    for key, value in event.items():
        hint = hints[key]
        if hint in (int, str, bool) and not (hint is int and isinstance(value, bool)):
            assert isinstance(value, hint), f"{cls.__name__}.{key}: {value!r}"
        elif get_origin(hint) is Literal:
            assert value in get_args(hint), f"{cls.__name__}.{key}: {value!r}"


def _record_every_emit(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    emit = EventHub.emit

    def checking_emit(self: EventHub, event: Any, run_id: str | None = None) -> Any:
        out = emit(self, event, run_id)
        seen.append(dict(out))
        return out

    monkeypatch.setattr(EventHub, "emit", checking_emit)
    return seen


@pytest.mark.parametrize("scenario", _scenarios())
async def test_emitted_events_match_their_typeddict(
    scenario: Callable[[], Coroutine[Any, Any, None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_every_emit(monkeypatch)
    await scenario()
    for event in seen:
        _check(event)


async def test_a_checkpoint_warning_matches_its_typeddict(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _record_every_emit(monkeypatch)
    store = create_memory_session_store()
    bad = {"version": 1, "runId": "run_1", "phase": "turn", "steering": "not a list"}
    session_id = await test_runtime_checkpoints._crashed_session(store, bad, "user")
    provider = create_mock_provider([[provider_text_delta("ok"), provider_done()]])
    model = test_runtime_checkpoints.MODEL
    session = create_agent(model=model, provider=provider, store=store).create_session(session_id)
    await session.resume()
    assert "checkpoint_warning" in [event["type"] for event in seen]
    for event in seen:
        _check(event)
