"""RPC requests for runs paused for approval (docs/cli.md, docs/approvals.md).

- ``approvals``: what the current session waits on (read from its store);
- ``approve`` / ``deny`` (``params.approvalId``, optional ``reason``;
  ``approve`` may carry edited ``arguments``): resume the paused run with
  that decision. Like ``prompt``, the resumed run streams its events under
  the request's id and is answered when it ends.

A run's answer (``prompt``, ``followUp``, ``approve``, ``deny``) says when
it is paused: ``paused: true``, ``waitingFor: "approval"`` and its
``pendingApprovals``. A decision the session cannot take (an unknown id,
one already decided, another session's) is refused by the runtime before
anything runs, as ``invalid_approval_decision``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prism.approvals import ApprovalDecision, pending_approvals
from prism.runtime import AgentSession, RunResult

__all__ = ["DecisionParamsError", "list_approvals", "parse_decision", "paused_fields"]

MAX_SHOWN_ID = 100


class DecisionParamsError(ValueError):
    """``approve``/``deny`` params that are not a decision (``invalid_params``)."""


def parse_decision(command: str, params: Mapping[str, Any]) -> tuple[str, ApprovalDecision]:
    """``(approval id, decision)`` from an ``approve``/``deny`` request."""
    unknown = sorted(set(params) - {"approvalId", "reason", "arguments"})
    if unknown:
        raise DecisionParamsError(f"{command} does not take params.{unknown[0][:MAX_SHOWN_ID]}")
    approval = params.get("approvalId")
    if not isinstance(approval, str) or not approval:
        raise DecisionParamsError(f"{command} needs params.approvalId (a string)")
    reason = params.get("reason", "")
    if not isinstance(reason, str):
        raise DecisionParamsError(f"{command} params.reason must be a string")
    arguments = params.get("arguments")
    if command == "deny":
        if arguments is not None:
            raise DecisionParamsError("deny does not take params.arguments (approve edits)")
        return approval, ApprovalDecision.deny(reason or "denied by the rpc client")
    if arguments is None:
        return approval, ApprovalDecision.approve(reason)
    if not isinstance(arguments, dict):
        raise DecisionParamsError("approve params.arguments must be an object")
    return approval, ApprovalDecision.edit(arguments=arguments, reason=reason)


async def list_approvals(session: AgentSession) -> dict[str, Any]:
    """The ``approvals`` response."""
    pending = await pending_approvals(session)
    return {"sessionId": session.id, "waiting": bool(pending), "pendingApprovals": pending}


def paused_fields(result: RunResult | None) -> dict[str, Any]:
    """What a run's answer adds when the run is paused for approval."""
    if result is None or not result.paused:
        return {}
    return {
        "paused": True,
        "waitingFor": "approval",
        "pendingApprovals": [dict(a) for a in result.pending_approvals],
    }
