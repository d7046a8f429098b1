"""Approvals that pause a durable run (docs/approvals.md).

A tool call that raises ``ApprovalRequiredError`` before any side effect
comes back from dispatch as a result with code ``approval_required``. A
durable run does not store that result: it stores an *approval request*
in its checkpoints (``pendingApprovals``) and ends paused; the rest of the
tool round still runs. ``session.resume(decisions=...)`` (any process,
same store) checks the decisions against the newest checkpoint, then runs
each approved or edited call once (the decision visible to it through
``prism.security.approval.granting``), answers each denied call with a
``policy_denied`` error, and goes on; approvals left unanswered stay
pending in the next checkpoint.

This module holds the pure parts: building a request, reading requests
back from a checkpoint, normalizing and checking decisions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from prism.contracts import SessionEntry, ToolCall, ToolResult
from prism.errors import ConfigError
from prism.security.approval import APPROVAL_REQUIRED, ApprovalDecision
from prism.security.execution import ExecutionDecision

__all__ = [
    "ApprovalDecisionError",
    "approval_request",
    "check_decisions",
    "is_approval_request",
    "normalize_decisions",
    "parse_pending_approvals",
]

DecisionInput = ApprovalDecision | ExecutionDecision | bool | str


class ApprovalDecisionError(ConfigError):
    """A decision that cannot be applied (unknown, already decided, for
    another session, the run since compacted or closed). Nothing ran and
    nothing was stored."""

    code = "invalid_approval_decision"


def approval_id(session_id: str, run_id: str | None, call_id: str) -> str:
    """Stable across processes and replays: a pure function of the call."""
    digest = hashlib.sha256(f"{session_id}\0{run_id}\0{call_id}".encode()).hexdigest()
    return f"approval_{digest[:20]}"


def is_approval_request(result: ToolResult) -> bool:
    value = result.get("value")
    return (
        bool(result.get("isError"))
        and isinstance(value, Mapping)
        and value.get("code") == APPROVAL_REQUIRED
    )


def approval_request(
    session_id: str, run_id: str | None, call: ToolCall, result: ToolResult
) -> dict[str, Any]:
    """The pending approval stored in checkpoints and reported in the run's
    result: its id, the call (arguments as the store keeps them: the store
    redacts the checkpoint like any entry), the action's context, why."""
    value: Any = result.get("value") or {}
    detail = value.get("approval") if isinstance(value, Mapping) else None
    detail = detail if isinstance(detail, Mapping) else {}
    request: dict[str, Any] = {
        "id": approval_id(session_id, run_id, call["id"]),
        "toolCallId": call["id"],
        "tool": call["name"],
        "arguments": dict(call.get("arguments") or {}),
        "reason": str(detail.get("reason") or value.get("message") or "needs approval"),
    }
    action = detail.get("action")
    if isinstance(action, Mapping) and action:
        request["action"] = dict(action)
    return request


def parse_pending_approvals(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The well-formed ``pendingApprovals`` of a checkpoint's data."""
    raw = data.get("pendingApprovals")
    if not isinstance(raw, list):
        return []
    return [
        dict(item)
        for item in raw
        if isinstance(item, Mapping)
        and all(isinstance(item.get(k), str) for k in ("id", "toolCallId", "tool"))
    ]


def normalize_decision(approval: str, decision: Any) -> ApprovalDecision:
    if isinstance(decision, ApprovalDecision):
        return decision
    if decision is True or decision == "approve":
        return ApprovalDecision.approve()
    if decision is False or decision == "deny":
        return ApprovalDecision.deny()
    if isinstance(decision, ExecutionDecision):
        if decision.outcome == "allow":
            return ApprovalDecision.approve(decision.reason)
        if decision.outcome == "deny":
            return ApprovalDecision.deny(decision.reason)
        if decision.outcome == "allow_with_changes":
            return ApprovalDecision.edit(action=decision.action, reason=decision.reason)
    raise ApprovalDecisionError(
        f"decision for {approval!r} must be an ApprovalDecision, an ExecutionDecision"
        f" (allow, deny, allow_with_changes), True/False or 'approve'/'deny';"
        f" got {type(decision).__name__}"
    )


def normalize_decisions(decisions: Mapping[str, Any] | None) -> dict[str, ApprovalDecision]:
    if decisions is None:
        return {}
    if not isinstance(decisions, Mapping):
        raise ApprovalDecisionError("decisions must be a mapping of approval id to decision")
    normalized: dict[str, ApprovalDecision] = {}
    for key, decision in decisions.items():
        if not isinstance(key, str):
            raise ApprovalDecisionError(f"approval ids are strings, got {type(key).__name__}")
        normalized[key] = normalize_decision(key, decision)
    return normalized


def check_decisions(
    session_id: str,
    branch: Sequence[SessionEntry],
    checkpoint_index: int | None,
    pending: Sequence[Mapping[str, Any]],
    decisions: Mapping[str, ApprovalDecision],
) -> None:
    """Refuse decisions that cannot apply, before anything runs or is stored."""
    if not decisions:
        return
    waiting = {a["id"] for a in pending}
    unknown = [d for d in decisions if d not in waiting]
    if unknown:
        seen = _approvals_seen(branch)
        first = unknown[0]
        if first in seen:
            why = "was already decided (or its run was closed by a newer run)"
        else:
            why = "is not an approval of this session (unknown id, or another session's)"
        listing = ", ".join(sorted(waiting)) or "none"
        raise ApprovalDecisionError(
            f"approval {first!r} {why}; session {session_id!r} has pending approvals: {listing}."
            " Nothing was run."
        )
    if checkpoint_index is not None and any(
        entry.get("kind") == "compaction" for entry in branch[checkpoint_index:]
    ):
        raise ApprovalDecisionError(
            f"session {session_id!r} was compacted after its run paused for approval; the"
            " paused tool calls are no longer in its context, so they cannot be resumed."
            " Start a new run instead. Nothing was run."
        )


def first_request_index(branch: Sequence[SessionEntry], approval: str) -> int | None:
    """The position of the first checkpoint that lists ``approval``."""
    for index, entry in enumerate(branch):
        data = entry.get("data") if entry.get("kind") == "custom" else None
        if isinstance(data, Mapping) and any(
            a["id"] == approval for a in parse_pending_approvals(data)
        ):
            return index
    return None


def _approvals_seen(branch: Sequence[SessionEntry]) -> set[str]:
    seen: set[str] = set()
    for entry in branch:
        data = entry.get("data") if entry.get("kind") == "custom" else None
        if isinstance(data, Mapping):
            seen.update(a["id"] for a in parse_pending_approvals(data))
    return seen
