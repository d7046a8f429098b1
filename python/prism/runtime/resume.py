"""The session side of durable runs: taking over an unfinished run's
identity and state on resume, and closing a durable run that failed.

Kept out of ``session.py`` so the session only decides *when* to resume;
the checkpoint format itself lives in ``prism.runtime.durable``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import anyio

from prism.assembly.groups import tool_result_message
from prism.contracts import SessionEntry, ToolCall, ToolResult
from prism.errors import ConfigError
from prism.runtime.context import RunClaim, RunContext
from prism.runtime.durable import ResumePoint, find_resume_point

__all__ = ["close_failed_run", "take_over"]


def take_over(
    run: RunContext, claim: RunClaim, branch: Sequence[SessionEntry]
) -> ResumePoint | None:
    """Find the unfinished run on ``branch`` and continue as it: its id,
    queued input, and (when it saved them) its attention frontier and model
    override. None when there is nothing to resume. Each checkpoint field
    dropped as malformed becomes one ``checkpoint_warning`` event (the
    field's name and why, never its value), emitted under the run's id."""
    warnings: list[tuple[str, str]] = []
    point = find_resume_point(branch, lambda field, why: warnings.append((field, why)))
    if point is not None and point.checkpoint.engine is not None and run.journal is None:
        # Resuming here too would run its unrecorded steps twice.
        raise ConfigError(
            f"the unfinished run {point.checkpoint.run_id!r} belongs to {point.checkpoint.engine!r}:"
            " that engine recovers it; session.resume() leaves it alone"
        )
    if point is not None:
        _restore(run, claim, point)
    for field, why in warnings:
        run.emit({"type": "checkpoint_warning", "field": field, "message": why})
    return point


def _restore(run: RunContext, claim: RunClaim, point: ResumePoint) -> None:
    checkpoint = point.checkpoint
    if checkpoint.run_id is not None:
        claim.run_id = checkpoint.run_id
        run.run_id = checkpoint.run_id
    claim.inbox.steer(checkpoint.steering)
    claim.inbox.follow_up(checkpoint.follow_ups)
    if run.model is None and checkpoint.model is not None:
        run.model = checkpoint.model
    if checkpoint.attention_sticky is not None:
        from prism.attention import AttentionStickyFrontier

        frontier = AttentionStickyFrontier.from_json(checkpoint.attention_sticky)
        frontier.mark_persisted(frontier.to_json())
        run.frontier = frontier


def _unjournaled_entry_id() -> str:
    return f"entry_{uuid.uuid4().hex[:20]}"


def _closing_result(call: ToolCall, aborted: bool) -> ToolResult:
    why = "the run was aborted" if aborted else "the run failed"
    return {
        "toolCallId": call["id"],
        "name": call["name"],
        "value": {"message": f"Tool call not completed: {why}", "code": "run_ended"},
        "isError": True,
    }


async def close_failed_run(run: RunContext, aborted: bool) -> None:
    """A durable run that ends in an error or an abort (in this process) is
    finished, not crashed: answer its recorded-but-unanswered tool calls (so
    the branch never holds a call without a result) and write its ``end``
    checkpoint, so a later ``resume()`` does not pick it up. Best effort:
    when the store itself is what failed, the original error still wins.

    Under a replaying engine (``run.journal``) the closing entries get ids
    outside the run's deterministic sequence: if the engine replays the run
    later (a cancelled DBOS workflow resumed, say), the replay continues
    from the last step it finds stored, on a new branch beside them."""
    if run.journal is not None:
        run.new_id = _unjournaled_entry_id
    entries: list[SessionEntry] = []
    for call in run.pending_calls:
        entries.append(
            {
                "id": run.new_entry_id(),
                "sessionId": run.session_id,
                "parentId": None,
                "kind": "message",
                "message": tool_result_message(_closing_result(call, aborted)),
            }
        )
    run.pending_calls = []
    run.started_calls.clear()
    status = "aborted" if aborted else "failed"
    batch: list[Any] = [*entries, *run.checkpoint_entries("end", status)]
    with anyio.CancelScope(shield=True):
        try:
            await run.append(batch)
        except Exception:
            return
