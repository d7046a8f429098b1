"""The session side of durable runs: taking over an unfinished run on
``resume()``, and closing one that a new run finds unfinished.

Kept out of ``session.py`` so the session only decides *when* to resume;
the checkpoint format lives in ``prism.runtime.durable``, the checkpointing
step runner in ``prism.runtime.durable_steps``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

from prism.assembly.groups import tool_result_message
from prism.contracts import SessionEntry, SessionEntryParseError
from prism.errors import CheckpointDamagedError, ConfigError
from prism.runtime.approvals import check_decisions, first_request_index
from prism.runtime.checkpoint_state import restore_carried
from prism.runtime.context import Run
from prism.runtime.durable import (
    CHECKPOINT_CUSTOM_TYPE,
    EVIDENCE_FIELDS,
    ResumePoint,
    find_resume_point,
)
from prism.runtime.durable_steps import (
    DurableSteps,
    JournaledSteps,
    checkpoint_entry,
    closing_result,
)

__all__ = ["close_unfinished", "take_over"]

CLOSED_BY_NEW_RUN = (
    "the run's process ended before it finished, and a new run started on the session"
    " instead of resuming it"
)


def _engine_refusal(point: ResumePoint) -> ConfigError:
    checkpoint = point.checkpoint
    return ConfigError(
        f"the unfinished run {checkpoint.run_id!r} belongs to {checkpoint.engine!r}:"
        " that engine recovers it; session.resume() and new runs leave it alone"
    )


def take_over(
    run: Run, branch: Sequence[SessionEntry], quarantined: Sequence[SessionEntryParseError]
) -> ResumePoint | None:
    """Find the unfinished run on ``branch`` and continue as it: its id,
    queued input, counters and (when it saved them) its attention frontier
    and model override. None when there is nothing to resume. Each
    checkpoint field dropped as malformed becomes one ``checkpoint_warning``
    event (the field's name and why, never its value), emitted under the
    run's id; a dropped field that was the evidence of which tool calls ran
    refuses the resume instead (``CheckpointDamagedError``)."""
    warnings: list[tuple[str, str]] = []
    point = find_resume_point(branch, lambda field, why: warnings.append((field, why)))
    steps = run.steps
    assert isinstance(steps, DurableSteps)
    if point is not None and point.checkpoint.engine is not None:
        if not isinstance(steps, JournaledSteps):
            raise _engine_refusal(point)  # resuming here too would run its steps twice
    _check_approval_decisions(run, steps, branch, point)
    if point is not None:
        _refuse_without_evidence(run, steps, point, warnings, quarantined)
        _restore(run, point)
        restore_carried(
            run.settings.config.checkpoint_state,
            run.port.session_id,
            point.checkpoint.state,
            lambda field, why: warnings.append((field, why)),
        )
    for field, why in warnings:
        run.port.emit({"type": "checkpoint_warning", "field": field, "message": why})
    return point


def _check_approval_decisions(
    run: Run, steps: DurableSteps, branch: Sequence[SessionEntry], point: ResumePoint | None
) -> None:
    """Decisions brought to ``resume`` must each answer an approval the
    paused run waits on (``ApprovalDecisionError`` before anything runs)."""
    pending = point.checkpoint.pending_approvals if point is not None else []
    first = min(
        (i for a in pending if (i := first_request_index(branch, a["id"])) is not None),
        default=None,
    )
    check_decisions(run.port.session_id, branch, first, pending, steps.decisions)


def _refuse_without_evidence(
    run: Run,
    steps: DurableSteps,
    point: ResumePoint,
    warnings: list[tuple[str, str]],
    quarantined: Sequence[SessionEntryParseError],
) -> None:
    """Refuse when a pending non-idempotent call could run a second time
    because the record of whether it started is unreadable: a malformed
    checkpoint field, or an entry of this session the store quarantined."""
    at_risk = [c for c in point.pending if not steps.is_idempotent(c)]
    if not at_risk:
        return
    session_id = run.port.session_id
    names = ", ".join(repr(c["id"]) for c in at_risk)
    damaged = sorted({name for name, _ in warnings if name in EVIDENCE_FIELDS})
    if damaged:
        raise CheckpointDamagedError(
            f"cannot resume session {session_id!r}: checkpoint entry {point.entry_id!r} has"
            f" a malformed {', '.join(damaged)}, so whether tool call(s) {names} (not"
            " idempotent) already ran is unknown; answer them or start a new run"
        )
    # A quarantined checkpoint of this run (or one too damaged to say whose)
    # may be the lost "tool_start" of a call the branch shows unstarted;
    # only once the run had stored the turn, though: before, nothing ran.
    run_id = point.checkpoint.run_id or ""
    lines = [
        q["line"]
        for q in quarantined
        if session_id in q["raw"]
        and CHECKPOINT_CUSTOM_TYPE in q["raw"]
        and (run_id in q["raw"] or '"runId"' not in q["raw"])
    ]
    unstarted = [c for c in at_risk if c["id"] not in point.checkpoint.started_tool_call_ids]
    if unstarted and lines and point.dispatched:
        raise CheckpointDamagedError(
            f"cannot resume session {session_id!r}: the store quarantined unreadable"
            f" entr{'y' if len(lines) == 1 else 'ies'} of it (line/row {lines[0]}) that may"
            f" have recorded that tool call(s) {names} (not idempotent) started, after"
            f" checkpoint entry {point.entry_id!r}; answer them or start a new run"
        )


def _restore(run: Run, point: ResumePoint) -> None:
    checkpoint, port = point.checkpoint, run.port
    if checkpoint.run_id is not None:
        port.claim.run_id = checkpoint.run_id
    port.inbox.steer(checkpoint.steering)
    port.inbox.follow_up(checkpoint.follow_ups)
    if run.settings.model is None and checkpoint.model is not None:
        run.settings = dataclasses.replace(run.settings, model=checkpoint.model)
        run.steps.settings = run.settings
    if checkpoint.attention_sticky is not None:
        from prism.attention import AttentionStickyFrontier

        frontier = AttentionStickyFrontier.from_json(checkpoint.attention_sticky)
        frontier.mark_persisted(frontier.to_json())
        port.frontier = frontier


async def close_unfinished(run: Run) -> None:
    """Before a new run appends its input on a branch whose newest durable
    run never finished (its process died and nobody resumed it): close that
    run, so the new run's request never carries a tool call without its
    result. Its unanswered calls get ``run_ended`` error results and it gets
    its ``end`` checkpoint (status ``failed``), in one write. A run a
    replaying engine owns is that engine's to recover: refused."""
    port = run.port
    point = find_resume_point(port.branch.entries, lambda _field, _why: None)
    if point is None:
        return
    checkpoint = point.checkpoint
    steps = run.steps
    if checkpoint.engine is not None:
        journal = steps.journal if isinstance(steps, JournaledSteps) else None
        if journal is None or journal.run_id != checkpoint.run_id:
            raise _engine_refusal(point)
        return  # this very run, replayed by its engine
    batch: list[Any] = [
        {
            "id": _fresh_id(),
            "sessionId": port.session_id,
            "parentId": None,
            "kind": "message",
            "message": tool_result_message(closing_result(call, CLOSED_BY_NEW_RUN)),
        }
        for call in point.pending
    ]
    data: dict[str, Any] = {
        "version": 1,
        "runId": checkpoint.run_id,
        "step": checkpoint.step + 1,
        "phase": "end",
        "status": "failed",
    }
    batch.append(checkpoint_entry(port.session_id, _fresh_id(), data))
    await steps.append(batch)


def _fresh_id() -> str:
    # Outside any run's id sequence: the closing belongs to the old run.
    return f"entry_{uuid.uuid4().hex[:20]}"
