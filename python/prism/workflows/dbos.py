"""Workflows as DBOS workflows (optional extra ``prism-harness[dbos]``).

``DBOSWorkflow(workflow, store=...)`` runs ``workflow`` as a DBOS workflow
whose id is the workflow id; each of its steps is one DBOS step that runs
that step through the store-backed engine (``advance_workflow``). When a
process dies, DBOS calls the workflow again on a process sharing its system
database (its own executor at launch, or any worker through
``DBOS.recover_pending_workflows``): recorded steps return their recorded
outcome, and the first unrecorded one continues from the store, with the
same guarantees as ``resume_workflow`` (a finished step never runs again, a
cut-off non-idempotent step asks a human first, an agent run continues
from its checkpoint).

A pause is a durable wait: the workflow waits for a DBOS message carrying
the decisions, which ``DBOSWorkflow.send_decisions(workflow_id, {...})``
sends from any process. Construct every ``DBOSWorkflow`` (same name, same
steps) before ``DBOS.launch()`` in every process that may run or recover it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    from dbos import DBOS, SetWorkflowID
except ImportError as exc:  # pragma: no cover - exercised where the extra is missing
    raise ImportError("prism.workflows.dbos needs DBOS: pip install 'prism-harness[dbos]'") from exc

from prism.approvals import ApprovalDecision, ApprovalDecisionError
from prism.durable._dbos_recovery import resume_pending
from prism.errors import ConfigError
from prism.stores import SessionStore
from prism.workflows.background import workflow_status
from prism.workflows.driver import WorkflowResult
from prism.workflows.engine import advance_workflow, resume_workflow, start_record
from prism.workflows.graph import Workflow

__all__ = ["DECISIONS_TOPIC", "WORKFLOW_NAME", "DBOSWorkflow", "recover_workflows"]

WORKFLOW_NAME = "prism.workflow"
DECISIONS_TOPIC = "prism.workflow.decisions"
_WAIT_SECONDS = 24 * 3600  # one durable wait; the workflow waits again after it

# Workflows by name: a recovered DBOS workflow carries only the name.
_WORKFLOWS: dict[str, DBOSWorkflow] = {}


@DBOS.workflow(name=WORKFLOW_NAME)
async def _prism_workflow(name: str, input: Any) -> dict[str, Any]:
    durable = _WORKFLOWS.get(name)
    if durable is None:
        raise ConfigError(
            f"no DBOSWorkflow named {name!r} in this process: construct it before DBOS.launch()"
        )
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    flow, store = durable.workflow, durable.store

    async def start() -> None:
        await start_record(flow, input, store=store, workflow_id=workflow_id)

    await DBOS.run_step_async({"name": "start"}, start)
    seq = 0
    decisions: dict[str, Any] = {}
    while True:

        async def advance(at: int = seq, answers: dict[str, Any] = decisions) -> dict[str, Any]:
            return await advance_workflow(
                flow, store=store, workflow_id=workflow_id, seq=at, decisions=answers
            )

        outcome: dict[str, Any] = await DBOS.run_step_async({"name": f"step {seq}"}, advance)
        if outcome["status"] == "completed":
            return outcome
        if outcome["status"] == "next":
            seq, decisions = int(outcome["seq"]), {}
            continue
        message = await DBOS.recv_async(DECISIONS_TOPIC, timeout_seconds=_WAIT_SECONDS)
        decisions = dict(message) if isinstance(message, Mapping) else {}


class DBOSWorkflow:
    """``workflow`` as a DBOS workflow registered under ``name`` (default:
    the workflow's name), recording its steps in ``store``."""

    def __init__(self, workflow: Workflow, *, store: SessionStore, name: str | None = None) -> None:
        workflow.validate()
        self.workflow = workflow
        self.store = store
        self.name = name or workflow.name
        existing = _WORKFLOWS.get(self.name)
        if existing is not None and existing.workflow is not workflow:
            raise ConfigError(f"a different workflow is already registered as {self.name!r}")
        _WORKFLOWS[self.name] = self

    async def start(self, input: Any, *, workflow_id: str) -> Any:
        """Start it and return the DBOS handle at once. The same id again
        returns that workflow's handle: it never runs twice."""
        first = self.workflow.steps[str(self.workflow.start)]
        data = first.input_adapter.dump_python(
            first.input_adapter.validate_python(input), mode="json"
        )
        with SetWorkflowID(workflow_id):
            return await DBOS.start_workflow_async(_prism_workflow, self.name, data)

    async def run(self, input: Any, *, workflow_id: str) -> WorkflowResult:
        """Start it and wait: completed (typed output) or the error it ended
        with. A pause waits (durably) for ``send_decisions``."""
        handle = await self.start(input, workflow_id=workflow_id)
        await handle.get_result()
        return await self.result(workflow_id)

    async def result(self, workflow_id: str) -> WorkflowResult:
        """Wait for ``workflow_id`` (one DBOS recovered too) and return its
        stored result, with the output typed as its last step declared."""
        handle: Any = await DBOS.retrieve_workflow_async(workflow_id)
        await handle.get_result()
        return await resume_workflow(self.workflow, store=self.store, workflow_id=workflow_id)

    async def send_decisions(self, workflow_id: str, decisions: Mapping[str, Any]) -> None:
        """Answer a paused workflow's approvals from any process. Checked
        against what it waits on first (``ApprovalDecisionError``)."""
        status = await workflow_status(self.store, workflow_id)
        pending = [a["id"] for a in status.pending_approvals]
        data: dict[str, Any] = {}
        for key, raw in decisions.items():
            if key not in pending:
                raise ApprovalDecisionError(
                    f"{key!r} is not an approval workflow {workflow_id!r} waits on;"
                    f" pending: {pending}"
                )
            data[key] = _decision_json(raw)
        await DBOS.send_async(workflow_id, data, DECISIONS_TOPIC)


def _decision_json(raw: Any) -> Any:
    if isinstance(raw, ApprovalDecision):
        out: dict[str, Any] = {"kind": raw.kind, "reason": raw.reason}
        if raw.arguments is not None:
            out["arguments"] = dict(raw.arguments)
        return out
    return raw


async def recover_workflows(executor_id: str) -> list[str]:
    """Hand the unfinished workflows of a dead DBOS executor (a fleet worker
    that will not come back under its id) to the fleet: each is enqueued
    again and whichever live worker dequeues it continues it. Returns their
    ids. Only for executors that are really gone (a live one keeps running
    its workflows; the workflow's session lease then refuses the second
    driver). A worker restarting under its own id needs none of this: DBOS
    recovers its workflows at launch."""
    return await resume_pending(WORKFLOW_NAME, executor_id)
