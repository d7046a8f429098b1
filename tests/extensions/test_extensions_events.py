from __future__ import annotations

from typing import Any

import pytest

from prism.errors import ConfigError
from prism.extensions import create_event_bus


def test_listeners_run_in_subscription_order_with_wildcards() -> None:
    bus = create_event_bus()
    seen: list[str] = []
    bus.on("a", lambda e: seen.append("a1"))
    bus.on("*", lambda e: seen.append(f"*{e['type']}"))
    bus.on("a", lambda e: seen.append("a2"))
    bus.emit({"type": "a"})
    bus.emit({"type": "b"})
    assert seen == ["a1", "*a", "a2", "*b"]


def test_listener_error_is_isolated_and_reported() -> None:
    reported: list[tuple[str, str]] = []
    bus = create_event_bus(lambda event, error: reported.append((event["type"], str(error))))
    seen: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("nope")

    bus.on("x", broken)
    bus.on("x", lambda e: seen.append("ok"))
    bus.emit({"type": "x"})
    assert seen == ["ok"]
    assert reported == [("x", "nope")]


def test_listeners_cannot_edit_what_later_listeners_see() -> None:
    bus = create_event_bus()
    seen: list[Any] = []

    def editor(event: dict[str, Any]) -> None:
        event["error"]["message"] = "changed"

    bus.on("x", editor)
    bus.on("x", lambda e: seen.append(e["error"]["message"]))
    original = {"type": "x", "error": {"message": "original"}}
    bus.emit(original)
    assert seen == ["original"]
    assert original["error"] == {"message": "original"}


def test_unsubscribe_removes_only_that_subscription() -> None:
    bus = create_event_bus()
    seen: list[int] = []

    def handler(event: dict[str, Any]) -> None:
        seen.append(1)

    off = bus.on("x", handler)
    bus.on("x", handler)
    off()
    off()
    bus.emit({"type": "x"})
    assert seen == [1]
    assert bus.listener_count("x") == 1


def test_async_handlers_refused() -> None:
    bus = create_event_bus()

    async def handler(event: dict[str, Any]) -> None:
        return None

    with pytest.raises(ConfigError, match="must be synchronous"):
        bus.on("x", handler)  # type: ignore[arg-type]


def test_handler_returning_awaitable_is_reported() -> None:
    reported: list[str] = []
    bus = create_event_bus(lambda event, error: reported.append(str(error)))

    async def later() -> None:
        return None

    bus.on("x", lambda e: later())  # type: ignore[arg-type]
    bus.emit({"type": "x"})
    assert reported == ["event handlers must be synchronous"]


def test_bad_subscriptions_and_events() -> None:
    bus = create_event_bus()
    with pytest.raises(ConfigError, match="event type"):
        bus.on("", lambda e: None)
    with pytest.raises(ConfigError, match="must be callable"):
        bus.on("x", "nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a non-empty string 'type'"):
        bus.emit({"kind": "x"})


def test_broken_error_reporter_does_not_disturb_emitter() -> None:
    def reporter(event: dict[str, Any], error: BaseException) -> None:
        raise RuntimeError("reporter broke")

    bus = create_event_bus(reporter)
    bus.on("x", lambda e: 1 / 0)  # type: ignore[arg-type]
    bus.emit({"type": "x"})
