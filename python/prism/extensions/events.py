"""The extension kernel's event bus: ordered, synchronous, isolated listeners.

Events are plain dicts with a ``type`` key. Listeners run in subscription
order; ``"*"`` subscribes to every event. A listener that raises does not stop
later listeners or the emitter: the error goes to ``on_listener_error``.
Listeners are synchronous because events are also emitted from synchronous
call sites (the middleware error callback); a listener that needs async work
should hand the event to a queue or task group it owns.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from prism.errors import ConfigError

EventHandler = Callable[[dict[str, Any]], None]
OnListenerError = Callable[[dict[str, Any], BaseException], None]

ANY_EVENT = "*"


class EventBus:
    def __init__(self, on_listener_error: OnListenerError | None = None) -> None:
        self._listeners: list[tuple[str, EventHandler]] = []
        self.on_listener_error = on_listener_error

    def on(self, event_type: str, handler: EventHandler) -> Callable[[], None]:
        """Subscribe ``handler`` to ``event_type`` (or ``"*"``); returns an unsubscribe."""
        if not isinstance(event_type, str) or not event_type:
            raise ConfigError("event type must be a non-empty string")
        if not callable(handler):
            raise ConfigError(f"handler for {event_type!r} events must be callable")
        if inspect.iscoroutinefunction(handler):
            raise ConfigError(
                f"handler for {event_type!r} events must be synchronous; "
                "schedule async work from a synchronous handler"
            )
        entry = (event_type, handler)
        self._listeners.append(entry)

        def unsubscribe() -> None:
            # Remove this exact subscription even if the handler was added twice.
            for index, existing in enumerate(self._listeners):
                if existing is entry:
                    del self._listeners[index]
                    return

        return unsubscribe

    def listener_count(self, event_type: str | None = None) -> int:
        if event_type is None:
            return len(self._listeners)
        return sum(1 for kind, _ in self._listeners if kind in (event_type, ANY_EVENT))

    def emit(self, event: Mapping[str, Any]) -> None:
        event_type = event.get("type")
        if not isinstance(event_type, str) or not event_type:
            raise ConfigError("an event needs a non-empty string 'type'")
        for kind, handler in list(self._listeners):
            if kind != event_type and kind != ANY_EVENT:
                continue
            # Each listener gets its own copy so one cannot edit what the next sees.
            payload = copy.deepcopy(dict(event))
            try:
                result = handler(payload)
                if inspect.isawaitable(result):
                    if inspect.iscoroutine(result):
                        result.close()
                    raise TypeError("event handlers must be synchronous")
            except Exception as error:
                self._report(dict(event), error)

    def _report(self, event: dict[str, Any], error: BaseException) -> None:
        if self.on_listener_error is None:
            return
        try:
            self.on_listener_error(event, error)
        except Exception:
            # The error reporter itself failed; nothing sensible is left to do
            # and the emitter must not be disturbed.
            pass


def create_event_bus(on_listener_error: OnListenerError | None = None) -> EventBus:
    return EventBus(on_listener_error)
