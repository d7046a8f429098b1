"""Finding delegations the runtime answered without running the tool.

A parent's decision ``deny`` on a delegation, or a new ``run()`` that
closes a paused parent, answers the waiting delegation call without
calling the delegation tool (docs/approvals.md): its child stays suspended
and its ``after`` hook has not run. ``Supervisor.reconcile(parent)`` reads
the parent's branch for such calls and settles them; this module finds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prism.contracts import SessionEntry
from prism.subagents.records import delegation_id_for

__all__ = ["Unsettled", "unsettled_delegations"]

# Codes of a delegation call answered without the tool running.
_UNRUN = frozenset({"policy_denied", "run_ended"})


@dataclass(frozen=True, slots=True)
class Unsettled:
    tool_call_id: str
    child: str
    task: str
    reason: str
    candidates: tuple[str, ...]
    """Delegation ids it may have (one per run id seen on the branch)."""


def _calls(entries: Sequence[SessionEntry], tool_name: str) -> dict[str, Mapping[str, Any]]:
    calls: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        message = entry.get("message") if entry.get("kind") == "message" else None
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if isinstance(block, Mapping) and block.get("type") == "tool_call":
                if block.get("name") == tool_name and isinstance(block.get("id"), str):
                    calls[block["id"]] = block
    return calls


def _unrun_results(entries: Sequence[SessionEntry], tool_name: str) -> dict[str, str]:
    """Tool call id -> why, for the delegation calls answered unrun."""
    out: dict[str, str] = {}
    for entry in entries:
        message = entry.get("message") if entry.get("kind") == "message" else None
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        for block in message.get("content") or []:
            if not isinstance(block, Mapping) or block.get("name") != tool_name:
                continue
            value = block.get("result")
            code = value.get("code") if isinstance(value, Mapping) else None
            if block.get("isError") and code in _UNRUN and isinstance(block.get("toolCallId"), str):
                out[block["toolCallId"]] = str(value.get("message") or code)  # type: ignore[union-attr]
    return out


def unsettled_delegations(
    parent_session_id: str, entries: Sequence[SessionEntry], tool_name: str
) -> list[Unsettled]:
    run_ids: list[str] = []
    for entry in entries:
        data = entry.get("data") if entry.get("customType") == "prism.checkpoint" else None
        run_id = data.get("runId") if isinstance(data, Mapping) else None
        if isinstance(run_id, str) and run_id not in run_ids:
            run_ids.append(run_id)
    calls = _calls(entries, tool_name)
    found: list[Unsettled] = []
    for call_id, reason in _unrun_results(entries, tool_name).items():
        call = calls.get(call_id)
        arguments = call.get("arguments") if call is not None else None
        if not isinstance(arguments, Mapping):
            continue
        candidates = tuple(delegation_id_for(parent_session_id, run, call_id) for run in run_ids)
        found.append(
            Unsettled(
                call_id,
                str(arguments.get("child", "")),
                str(arguments.get("task", "")),
                reason,
                candidates,
            )
        )
    return found
