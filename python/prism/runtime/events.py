"""Agent events: construction, redaction and synchronous fan-out to listeners.

Every event is a plain dict (``contracts.AgentEvent``) carrying ``type``,
``sessionId`` and, inside a run, ``runId``. docs/events.md documents the
union and the order the runtime emits it in.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Final, Literal, get_args

from prism.contracts import AgentEvent, AgentEventType, ErrorInfo, ExtensionErrorEvent
from prism.errors import error_info
from prism.security.redaction import (
    NOOP_REDACTOR,
    SecretRedactor,
    redact_keeping_ids,
    require_redactor,
)

__all__ = ["AGENT_EVENT_TYPES", "AgentEventListener", "EventHub"]

AgentEventListener = Callable[[AgentEvent], Any]

# One list of event names: the contract's Literal.
AGENT_EVENT_TYPES: Final[tuple[str, ...]] = get_args(AgentEventType)

# Every event the listeners see is also a ``prism.runtime`` record (after
# redaction): the run's story at DEBUG, a scheduled retry at INFO, a failed
# run at WARNING. Deltas are left out (0): the providers logger holds the
# raw stream, and one record per token would drown the rest.
_log = logging.getLogger("prism.runtime")
_EVENT_LEVELS: Final[dict[str, int]] = {
    "message_delta": 0,
    "retry_scheduled": logging.INFO,
    "error": logging.WARNING,
}
_LOGGED_CHARS = 4_000


def _log_event(event: AgentEvent) -> None:
    level = _EVENT_LEVELS.get(event.get("type", ""), logging.DEBUG)
    if level and _log.isEnabledFor(level):
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)
        if len(text) > _LOGGED_CHARS:
            text = text[:_LOGGED_CHARS] + f"... ({len(text)} chars)"
        _log.log(level, "%s %s", event.get("type"), text)


class EventHub:
    """Ordered listeners called synchronously, in subscription order.

    A listener that raises never breaks the run: the failure is reported as
    an ``extension_error`` event to the other listeners (a listener failing
    on an ``extension_error`` is not reported again, so this cannot loop).
    Events pass through the redactor once, before any listener sees them.
    """

    __slots__ = ("_listeners", "_redactor", "session_id")

    def __init__(self, session_id: str, redactor: SecretRedactor) -> None:
        self.session_id = session_id
        require_redactor(redactor, owner="EventHub")
        # None internally: the per-event fast path when there are no secrets.
        self._redactor = redactor if len(redactor) else None
        self._listeners: list[AgentEventListener] = []

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        if not callable(listener):
            raise TypeError("event listener must be callable")
        listeners = self._listeners
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return unsubscribe

    def emit(self, event: AgentEvent, run_id: str | None = None) -> AgentEvent:
        """Stamp ``sessionId`` (and ``runId``) onto ``event``, redact it once,
        call every listener; returns the event the listeners saw."""
        event["sessionId"] = self.session_id
        if run_id is not None:
            event["runId"] = run_id
        out = event
        if self._redactor is not None:
            out = redact_keeping_ids(out, self._redactor)
        _log_event(out)
        if not self._listeners:
            return out
        for listener in tuple(self._listeners):
            try:
                listener(out)
            except Exception as error:
                if out.get("type") != "extension_error":
                    self.report_extension_error("listener", error, run_id)
        return out

    def report_extension_error(
        self,
        source: Literal["listener", "middleware"],
        error: BaseException,
        run_id: str | None,
        *,
        hook: str | None = None,
    ) -> None:
        """Emit ``extension_error`` for a failing listener (``source="listener"``)
        or middleware (``source="middleware"``, with its ``hook``)."""
        default_code = "middleware_error" if source == "middleware" else "extension_error"
        # The emit below redacts the whole event once; no second pass here.
        info: ErrorInfo = error_info(error, NOOP_REDACTOR, code=default_code)
        event: ExtensionErrorEvent = {"type": "extension_error", "source": source, "error": info}
        if hook is not None:
            event["hook"] = hook
        self.emit(event, run_id)
