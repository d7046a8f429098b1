"""Human approval that pauses a durable run and resumes it, possibly in
another process (docs/approvals.md).

Two ways a tool call comes to need a human:

- by name: ``requires_approval(tool)`` wraps a tool so every call (or every
  call a ``when`` predicate picks, e.g. refunds over a limit) waits for a
  decision before it runs;
- by action: an execution policy created with
  ``create_execution_policy(..., defer=True)`` answers ``ask`` for an
  action (the coding tools ask it inside each tool).

A durable run (``durable=True``) then ends paused: ``RunResult.paused``,
``RunResult.pending_approvals``. ``session.resume(decisions={id:
ApprovalDecision.approve()})`` continues it from any process holding the
same store. ``pending_approvals(session)`` lists what a session waits on
without taking its lease.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from prism.contracts import SessionEntry
from prism.errors import ExecutionDeniedError
from prism.runtime.approvals import ApprovalDecisionError
from prism.runtime.durable import find_resume_point
from prism.security.approval import (
    ApprovalDecision,
    ApprovalRequiredError,
    granted_decision,
    granting,
)
from prism.tools.context import ToolArgumentsError, ToolContext
from prism.tools.definition import ToolDefinition

__all__ = [
    "ApprovalDecision",
    "ApprovalDecisionError",
    "ApprovalRequiredError",
    "granted_decision",
    "granting",
    "pending_approvals",
    "pending_approvals_in",
    "requires_approval",
]

When = Callable[[Mapping[str, Any]], bool]


def requires_approval(
    tool: ToolDefinition, *, reason: str | None = None, when: When | None = None
) -> ToolDefinition:
    """``tool`` with a human in front of it: a call (each one, or each one
    ``when(arguments)`` is true for) raises ``ApprovalRequiredError`` before
    the tool runs, so a durable run pauses on it. Resumed with a decision,
    the call runs (``approve``), runs with the edited arguments (``edit``,
    checked against the tool's schema), or is refused with the reason
    (``deny``). In a run that cannot pause (not durable) the call is refused
    and the model is told it needs approval."""
    if not isinstance(tool, ToolDefinition):
        raise TypeError(f"requires_approval wraps a ToolDefinition, got {type(tool).__name__}")
    inner = tool.execute
    why = reason or f"tool {tool.name!r} needs approval"

    async def execute(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        granted = granted_decision()
        if granted is None:
            if when is not None and not when(arguments):
                return await _call(inner, arguments, ctx)
            raise ApprovalRequiredError(why, {"kind": "tool", "tool": tool.name})
        if granted.kind == "deny":
            raise ExecutionDeniedError(granted.reason or "not approved")
        if granted.kind == "edit":
            if granted.arguments is None:
                raise ExecutionDeniedError(f"an edit of tool {tool.name!r} needs arguments")
            arguments = dict(granted.arguments)
            problem = tool.validate_arguments(arguments)
            if problem is not None:
                raise ToolArgumentsError(f"edited arguments for {tool.name!r}: {problem}")
        return await _call(inner, arguments, ctx)

    return replace(tool, execute=execute)


async def _call(inner: Any, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    value = inner(arguments, ctx)
    if inspect.isawaitable(value):
        value = await value
    return value


def pending_approvals_in(entries: list[SessionEntry]) -> list[dict[str, Any]]:
    """The approvals the newest run on a branch (its entries, root to leaf)
    waits on; empty when it is not paused."""
    point = find_resume_point(entries, lambda _field, _why: None)
    if point is None:
        return []
    waiting = {c["id"] for c in point.pending}
    return [a for a in point.checkpoint.pending_approvals if a["toolCallId"] in waiting]


async def pending_approvals(session: Any) -> list[dict[str, Any]]:
    """What ``session`` (an ``AgentSession``) waits on, read from its store."""
    entries = await session.branch_entries()
    return pending_approvals_in(list(entries))
