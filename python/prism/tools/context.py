"""What a tool's ``execute`` is called with, and the error it may raise.

A module of its own so that ``tools/definition.py`` (which builds tools)
and ``tools/from_function.py`` (which it calls to build typed tools) both
use these without importing each other. ``tools/definition.py`` re-exports
every name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, get_args

from prism.contracts import ToolEventType
from prism.errors import ConfigError

__all__ = [
    "TOOL_EVENT_TYPES",
    "ToolArgumentsError",
    "ToolContext",
    "ToolEventError",
    "ToolEventSink",
    "ToolExecute",
    "ToolResultError",
]

ToolExecute: TypeAlias = Callable[[dict[str, Any], "ToolContext"], "Any | Awaitable[Any]"]
ToolEventSink: TypeAlias = Callable[[dict[str, Any]], Any]
"""Where ``ToolContext.emit`` sends an event: the run's event stream."""

# The members of the typed event union (prism.contracts) a tool may emit;
# every other type belongs to the runtime, which alone orders them.
TOOL_EVENT_TYPES: Final[frozenset[str]] = frozenset(get_args(ToolEventType))


class ToolEventError(ConfigError):
    """A tool emitted something that is not a tool event (an unknown or
    runtime-owned ``type``, or a value that is not JSON). Raised inside the
    tool, so dispatch reports it as the call's ``tool_error``."""

    code = "invalid_tool_event"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Per-call context. Dispatch fills ``tool_call_id``; the runtime fills the ids.

    Cancellation reaches a tool as anyio cancellation of the awaiting task;
    there is no separate signal object.
    """

    session_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    event_sink: ToolEventSink | None = None
    """Where :meth:`emit` sends events; the runtime sets it to the run's
    stream (``None`` outside a run)."""
    store: Any = None
    """The calling session's ``SessionStore`` (``None`` outside a run), for
    tools that keep sessions of their own beside it (sub-agents)."""

    def emit(self, event: Mapping[str, Any]) -> bool:
        """Emit a tool lifecycle event (``file_changed``, ``command_started``,
        ``command_finished``, ``plan_changed``, ``subagent_started``,
        ``subagent_stopped``) into the run's event stream,
        where it is redacted and stamped like every event and reaches every
        listener and ``--mode json`` in order between the call's
        ``tool_call`` and ``tool_result``. ``toolCallId`` is added when
        missing. Returns False when no run listens (a direct dispatch);
        raises ``ToolEventError`` for anything but a tool event."""
        kind = event.get("type") if isinstance(event, Mapping) else None
        if kind not in TOOL_EVENT_TYPES:
            shown = repr(kind)[:100]
            raise ToolEventError(
                f"a tool may emit only {', '.join(sorted(TOOL_EVENT_TYPES))} events, got type {shown}"
            )
        if self.event_sink is None:
            return False
        out = dict(event)
        if self.tool_call_id and "toolCallId" not in out:
            out["toolCallId"] = self.tool_call_id
        from prism._native import json_length  # loaded by dispatch already

        try:
            json_length(out)
        except (TypeError, ValueError) as error:
            raise ToolEventError(f"a {kind} event must be JSON data: {error}"[:300]) from None
        self.event_sink(out)
        return True


class ToolArgumentsError(Exception):
    """Raised by an ``execute`` whose arguments fail validation beyond the JSON
    schema (a typed tool's pydantic checks). Dispatch turns it into an
    ``invalid_arguments`` tool error, so the model sees it and the run goes on."""


class ToolResultError(Exception):
    """Raised by an ``execute`` whose return value cannot become JSON (a typed
    tool's value that pydantic cannot serialise). Dispatch turns it into a
    ``tool_error`` result with this message, so the model sees it and the run
    goes on instead of failing where the result is stored."""
