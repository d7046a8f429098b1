"""What a tool's ``execute`` is called with, and the error it may raise.

A module of its own so that ``tools/definition.py`` (which builds tools)
and ``tools/from_function.py`` (which it calls to build typed tools) both
use these without importing each other. ``tools/definition.py`` re-exports
every name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["ToolArgumentsError", "ToolContext", "ToolExecute", "ToolResultError"]

ToolExecute: TypeAlias = Callable[[dict[str, Any], "ToolContext"], "Any | Awaitable[Any]"]


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
    emit: Callable[[Any], Any] | None = None
    """Emits an event (an ``AgentEvent`` dict) on the calling run's session:
    stamped, redacted and fanned out like the runtime's own events (so it
    reaches listeners and ``--mode json``). ``None`` outside a run."""
    store: Any = None
    """The calling session's ``SessionStore`` (``None`` outside a run), for
    tools that keep sessions of their own beside it (sub-agents)."""


class ToolArgumentsError(Exception):
    """Raised by an ``execute`` whose arguments fail validation beyond the JSON
    schema (a typed tool's pydantic checks). Dispatch turns it into an
    ``invalid_arguments`` tool error, so the model sees it and the run goes on."""


class ToolResultError(Exception):
    """Raised by an ``execute`` whose return value cannot become JSON (a typed
    tool's value that pydantic cannot serialise). Dispatch turns it into a
    ``tool_error`` result with this message, so the model sees it and the run
    goes on instead of failing where the result is stored."""
