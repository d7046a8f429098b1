"""Deferred approval, the low layer: the error a tool raises when a human
must decide and the run can pause, and the decision a resumed run hands
to the call it approved.

A tool (or ``authorize`` for an execution policy that defers) raises
``ApprovalRequiredError`` *before any side effect*. A durable run catches
it at dispatch (a tool result with code ``approval_required``), stores the
request in a checkpoint and ends paused (``prism.approvals``). When the run
is resumed with a decision, the call runs again inside ``granting(...)``:
``granted_decision()`` then returns the human's answer, which the tool (or
``authorize``) applies instead of asking again.

The decision travels in a context variable set around one call's dispatch
only, so a decision can never leak to another call or another run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from prism.errors import ExecutionDeniedError

__all__ = [
    "APPROVAL_REQUIRED",
    "ApprovalDecision",
    "ApprovalRequiredError",
    "granted_decision",
    "granting",
]

APPROVAL_REQUIRED = "approval_required"
DecisionKind = Literal["approve", "deny", "edit"]


class ApprovalRequiredError(ExecutionDeniedError):
    """A human must decide before this call may act.

    A subclass of ``ExecutionDeniedError`` so that where no run can pause
    (a plain, non-durable run; a direct ``dispatch_tool_call``) it fails
    closed as a refusal the model sees. ``action`` is the structured
    context (an execution action's fields as JSON data), ``reason`` why it
    asks."""

    code = APPROVAL_REQUIRED

    def __init__(self, reason: str, action: Mapping[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.action: dict[str, Any] = dict(action or {})


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """A human's answer to one pending approval.

    ``approve`` runs the call as asked; ``deny`` answers the model with
    ``reason`` as a ``policy_denied`` tool error and never runs it; ``edit``
    runs it changed: ``arguments`` replace a name-gated tool's arguments,
    ``action`` (an ``ExecutionAction``) replaces an execution policy's
    action (checked against the policy again, so an edit cannot widen
    access)."""

    kind: DecisionKind
    reason: str = ""
    arguments: Mapping[str, Any] | None = None
    action: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in get_args(DecisionKind):
            raise ValueError(f"approval decision must be approve, deny or edit, got {self.kind!r}")
        if self.kind == "edit" and self.arguments is None and self.action is None:
            raise ValueError("an edit decision needs the edited arguments or action")
        if self.kind != "edit" and (self.arguments is not None or self.action is not None):
            raise ValueError("only an edit decision carries arguments or an action")
        if self.arguments is not None and not isinstance(self.arguments, Mapping):
            raise ValueError("edited arguments must be a mapping")

    @classmethod
    def approve(cls, reason: str = "") -> ApprovalDecision:
        return cls("approve", reason)

    @classmethod
    def deny(cls, reason: str = "") -> ApprovalDecision:
        return cls("deny", reason or "not approved")

    @classmethod
    def edit(
        cls, *, arguments: Mapping[str, Any] | None = None, action: Any = None, reason: str = ""
    ) -> ApprovalDecision:
        return cls("edit", reason, None if arguments is None else dict(arguments), action)


_GRANTED: ContextVar[ApprovalDecision | None] = ContextVar("prism_approval_granted", default=None)


def granted_decision() -> ApprovalDecision | None:
    """The human's decision for the tool call being dispatched now, if any."""
    return _GRANTED.get()


@contextmanager
def granting(decision: ApprovalDecision | None) -> Iterator[None]:
    """Dispatch one call with ``decision`` visible to it."""
    token = _GRANTED.set(decision)
    try:
        yield
    finally:
        _GRANTED.reset(token)
