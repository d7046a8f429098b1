"""Running a workflow durably: ``run_workflow`` and ``resume_workflow``.

One writer per workflow: a run or resume holds the store's session lease of
the workflow id for as long as it drives the steps (a second driver, in any
process, gets ``SessionBusyError``). Each step boundary is one record
(``prism.workflows.log``); a resume reads them back and continues at the
first step without a ``done`` record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from prism.approvals import ApprovalDecision, ApprovalDecisionError
from prism.stores import SessionStore, claim_session
from prism.workflows.driver import (
    Driver,
    WorkflowResult,
    decision_from,
    first_problem,
    load_value,
    type_name,
)
from prism.workflows.errors import (
    StepTypeError,
    WorkflowChangedError,
    WorkflowError,
    WorkflowStepError,
)
from prism.workflows.graph import Workflow
from prism.workflows.log import FORMAT_VERSION, Replayed, WorkflowLog, replay

__all__ = [
    "WorkflowResult",
    "advance_workflow",
    "resume_workflow",
    "run_workflow",
    "start_record",
]

_ANY_JSON: TypeAdapter[Any] = TypeAdapter(Any)


async def run_workflow(
    workflow: Workflow, input: Any, *, store: SessionStore, workflow_id: str
) -> WorkflowResult:
    """Run ``workflow`` on ``input`` from its start step, recording every
    step boundary in ``store`` under ``workflow_id`` (a session id of its
    own). Refused (``WorkflowError``, code ``workflow_exists``) when that id
    already holds a workflow: continue it with ``resume_workflow``."""
    workflow.validate()
    first = workflow.steps[str(workflow.start)]
    try:
        value = first.input_adapter.validate_python(input)
    except ValidationError as error:
        raise StepTypeError(
            f"workflow {workflow.name!r}: the input is not a {type_name(first.input_type)}"
            f" (the input of its start step {first.name!r}): {first_problem(error)}"
        ) from None
    async with await claim_session(store, workflow_id):
        entries = await store.list(workflow_id)
        if replay(entries).start is not None:
            raise WorkflowError(
                f"workflow {workflow_id!r} already exists in this store; resume_workflow"
                " continues it",
                code="workflow_exists",
            )
        log = WorkflowLog(store, workflow_id, entries[-1]["id"] if entries else None)
        await log.write(_start_data(workflow, first, value))
        state = Replayed(step=first.name, via=(first.name, "in"))
        result = await Driver(workflow, log, state, {}).drive(value)
        assert result is not None
        return result


async def resume_workflow(
    workflow: Workflow,
    *,
    store: SessionStore,
    workflow_id: str,
    decisions: Mapping[str, Any] | None = None,
) -> WorkflowResult:
    """Continue ``workflow_id`` at its first unfinished step, in any process
    holding the same store. A finished step is never run again; a
    non-idempotent step that started and did not finish is not re-run
    unless a human approves (the workflow pauses to ask). ``decisions``
    answers pending approvals by id (``True``/``False``, ``"approve"``/
    ``"deny"`` or an ``ApprovalDecision``). A completed workflow returns its
    stored result; a failed one raises ``WorkflowStepError``; one stored by
    a definition that differs at a step it reached raises
    ``WorkflowChangedError`` naming that step."""
    workflow.validate()
    async with await claim_session(store, workflow_id):
        entries = await store.list(workflow_id)
        state = replay(entries)
        if state.start is None:
            raise WorkflowError(
                f"no workflow {workflow_id!r} in this store", code="workflow_not_found"
            )
        _check_definition(workflow, state)
        answers = _check_decisions(workflow_id, state, decisions)
        if state.end is not None:
            return _finished(workflow_id, state.end, workflow)
        value = load_value(workflow, state.via, state.value)
        log = WorkflowLog(store, workflow_id, state.last)
        if state.step is None:  # the last step finished; its process died before the end
            await log.write(
                {
                    "t": "end",
                    "status": "completed",
                    "value": state.value,
                    "via": list(state.via or ()),
                }
            )
            return WorkflowResult(workflow_id, "completed", value)
        result = await Driver(workflow, log, state, answers).drive(value)
        assert result is not None
        return result


async def start_record(
    workflow: Workflow, input: Any, *, store: SessionStore, workflow_id: str
) -> None:
    """Store the ``start`` record unless the workflow has one (the DBOS
    integration's first step: a replay finds it there)."""
    workflow.validate()
    first = workflow.steps[str(workflow.start)]
    async with await claim_session(store, workflow_id):
        entries = await store.list(workflow_id)
        if replay(entries).start is not None:
            return
        log = WorkflowLog(store, workflow_id, entries[-1]["id"] if entries else None)
        await log.write(_start_data(workflow, first, first.input_adapter.validate_python(input)))


async def advance_workflow(
    workflow: Workflow,
    *,
    store: SessionStore,
    workflow_id: str,
    seq: int,
    decisions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the step numbered ``seq`` (one step), as JSON data for an engine
    that records it: ``{"status": "next", "seq": n}``, ``{"status":
    "paused", "pending": [...]}`` or ``{"status": "completed", "output": ...}``.
    A step already done (the engine's record of it was lost in a crash) is
    not run again. Decisions for approvals that are not pending are ignored."""
    workflow.validate()
    async with await claim_session(store, workflow_id):
        state = replay(await store.list(workflow_id))
        if state.start is None:
            raise WorkflowError(
                f"no workflow {workflow_id!r} in this store", code="workflow_not_found"
            )
        _check_definition(workflow, state)
        pending = _pending_ids(state)
        answers = _check_decisions(
            workflow_id, state, {k: v for k, v in (decisions or {}).items() if k in pending}
        )
        if state.end is not None:
            return _as_json(workflow, _finished(workflow_id, state.end, workflow))
        if state.seq > seq:
            return {"status": "next", "seq": state.seq}
        value = load_value(workflow, state.via, state.value)
        log = WorkflowLog(store, workflow_id, state.last)
        if state.step is None:
            await log.write(
                {
                    "t": "end",
                    "status": "completed",
                    "value": state.value,
                    "via": list(state.via or ()),
                }
            )
            return {"status": "completed", "output": state.value}
        result = await Driver(workflow, log, state, answers).drive(value, limit=1)
        if result is None:
            return {"status": "next", "seq": state.seq}
        return _as_json(workflow, result)


def _as_json(workflow: Workflow, result: WorkflowResult) -> dict[str, Any]:
    if result.paused:
        return {"status": "paused", "pending": result.pending_approvals}
    return {"status": "completed", "output": _ANY_JSON.dump_python(result.output, mode="json")}


def _pending_ids(state: Replayed) -> list[str]:
    return [
        a["id"] for a in (state.paused or {}).get("approvals", []) if a["id"] not in state.decided
    ]


def _start_data(workflow: Workflow, first: Any, value: Any) -> dict[str, Any]:
    return {
        "t": "start",
        "v": FORMAT_VERSION,
        "workflow": workflow.name,
        "first": first.name,
        "input": first.input_adapter.dump_python(value, mode="json"),
        "steps": {name: step.fingerprint for name, step in workflow.steps.items()},
    }


def _finished(workflow_id: str, end: dict[str, Any], workflow: Workflow) -> WorkflowResult:
    if end.get("status") == "completed":
        via = end.get("via")
        output = load_value(workflow, (str(via[0]), str(via[1])) if via else None, end.get("value"))
        return WorkflowResult(workflow_id, "completed", output)
    error = end.get("error") or {}
    raise WorkflowStepError(
        f"workflow {workflow_id!r} failed at step {end.get('step')!r}:"
        f" {error.get('message', 'unknown error')}",
        step=end.get("step"),
        cause=error.get("code"),
    )


def _check_definition(workflow: Workflow, state: Replayed) -> None:
    start = state.start or {}
    if start.get("workflow") != workflow.name:
        raise WorkflowChangedError(
            f"stored workflow is {start.get('workflow')!r}, not {workflow.name!r}"
        )
    stored: dict[str, Any] = start.get("steps") or {}
    reached = [*state.visited]
    if state.step is not None and state.end is None and state.step not in reached:
        reached.append(state.step)
    for name in reached:
        step = workflow.steps.get(name)
        if step is None:
            raise WorkflowChangedError(
                f"workflow {workflow.name!r} changed: step {name!r}, which the stored run"
                " reached, no longer exists",
                step=name,
            )
        if stored.get(name) != step.fingerprint:
            raise WorkflowChangedError(
                f"workflow {workflow.name!r} changed at step {name!r}, which the stored run"
                " reached: its kind, types, edges or idempotence differ from the stored"
                " definition; finish it with the old definition or start a new workflow id",
                step=name,
            )


def _check_decisions(
    workflow_id: str, state: Replayed, decisions: Mapping[str, Any] | None
) -> dict[str, ApprovalDecision]:
    if decisions is None:
        return {}
    if not isinstance(decisions, Mapping):
        raise ApprovalDecisionError("decisions must be a mapping of approval id -> decision")
    pending = [
        a["id"] for a in (state.paused or {}).get("approvals", []) if a["id"] not in state.decided
    ]
    answers: dict[str, ApprovalDecision] = {}
    for key, raw in decisions.items():
        if key in state.decided:
            raise ApprovalDecisionError(f"approval {key!r} was already decided")
        if key not in pending:
            raise ApprovalDecisionError(
                f"{key!r} is not an approval workflow {workflow_id!r} waits on; pending: {pending}"
            )
        answers[key] = _coerce(key, raw)
    return answers


def _coerce(key: str, raw: Any) -> ApprovalDecision:
    if isinstance(raw, ApprovalDecision):
        return raw
    if raw is True or raw == "approve":
        return ApprovalDecision.approve()
    if raw is False or raw == "deny":
        return ApprovalDecision.deny()
    if isinstance(raw, Mapping) and raw.get("kind") in ("approve", "deny", "edit"):
        try:  # the JSON form a DBOS message carries
            return decision_from(raw)
        except ValueError as error:
            raise ApprovalDecisionError(f"decision for {key!r}: {error}") from None
    raise ApprovalDecisionError(
        f"decision for {key!r} must be an ApprovalDecision, True/False or 'approve'/'deny'"
    )
