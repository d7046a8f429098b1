"""Prism runs as DBOS workflows (optional extra ``prism-harness[dbos]``).

``DBOSAgent(agent, name=...)`` makes each run of ``agent`` a DBOS workflow
whose id is the run id: each provider turn (each retry attempt) and each
tool call is a DBOS step, a retry's wait is a durable sleep, and the run's
entries get ids that are a pure function of the run and their position
(``prism.durable.journal``). When a process dies mid-run, DBOS calls the
workflow again on a process that shares its system database (on launch for
its own executor id, or ``DBOS.recover_pending_workflows``): recorded steps
return their recorded results, appends already stored are found instead of
made again, and the run continues from its first unrecorded step.

Import this module (and construct every ``DBOSAgent``) before
``DBOS.launch()`` in every process that may run or recover the runs: the
workflow is registered at import, and a recovered run finds its agent by
name. docs/durable.md has the set-up for one machine (SQLite system
database) and for a fleet (PostgreSQL).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    from dbos import DBOS, SetWorkflowID, StepOptions
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError("prism.durable.dbos needs DBOS: pip install 'prism-harness[dbos]'") from exc

from prism.contracts import Message
from prism.durable._dbos_recovery import resume_pending
from prism.durable.journal import (
    ReplayJournal,
    result_from_record,
    result_to_record,
    run_journaled,
)
from prism.errors import ConfigError
from prism.runtime.approvals import ApprovalDecisionError, normalize_decision
from prism.runtime.durable import find_resume_point
from prism.runtime.events import AgentEventListener
from prism.runtime.input import normalize_input
from prism.runtime.options import check_run_option_names
from prism.runtime.result import RunResult
from prism.security.redaction import redact_keeping_ids

if TYPE_CHECKING:
    from dbos import WorkflowHandleAsync

    from prism.runtime.agent import Agent

__all__ = [
    "WAIT_SLICE_SECONDS",
    "WORKFLOW_NAME",
    "DBOSAgent",
    "DBOSJournal",
    "approval_topic",
    "recover_runs",
]

WORKFLOW_NAME = "prism.run"
# How long one recv of an approval wait lasts before the next one starts.
WAIT_SLICE_SECONDS = 3600.0


def approval_topic(approval_id: str) -> str:
    return f"prism.approval.{approval_id}"


# Agents by name: a recovered workflow carries only the name, so every
# process that may recover it constructs the same DBOSAgent first.
_AGENTS: dict[str, DBOSAgent] = {}


class DBOSJournal(ReplayJournal):
    """A run's journal inside a DBOS workflow: steps are DBOS steps."""

    engine = "dbos"

    async def record(
        self, name: str, body: Callable[[], Coroutine[Any, Any, dict[str, Any]]]
    ) -> dict[str, Any]:
        options: StepOptions = {"name": name}
        recorded: dict[str, Any] = await DBOS.run_step_async(options, body)
        return recorded

    async def sleep(self, seconds: float) -> None:
        await DBOS.sleep_async(seconds)

    async def wait_for_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """DBOS's durable wait: ``recv`` on the approval's topic, in slices
        (each recorded, so a recovered run waits on where it was) until
        ``DBOSAgent.decide`` sends the decision. No worker is blocked: the
        workflow is suspended in DBOS, and survives restarts."""
        topic = approval_topic(str(request["id"]))
        while True:
            message = await DBOS.recv_async(topic, timeout_seconds=WAIT_SLICE_SECONDS)
            if message is not None:
                return message if isinstance(message, dict) else {"kind": "malformed"}


@DBOS.workflow(name=WORKFLOW_NAME)
async def _prism_run(
    agent_name: str, session_id: str, input: list[Message], options: dict[str, Any]
) -> dict[str, Any]:
    durable = _AGENTS.get(agent_name)
    if durable is None:
        raise ConfigError(
            f"no DBOSAgent named {agent_name!r} in this process: construct"
            f" DBOSAgent(agent, name={agent_name!r}) before DBOS.launch()"
        )
    run_id = DBOS.workflow_id
    assert run_id is not None
    session = durable.agent.create_session(session_id)
    for listener in durable._listeners:
        session.subscribe(listener)
    result = await run_journaled(session, input, DBOSJournal(run_id), **options)
    return result_to_record(result)


# Options a workflow cannot carry or that a DBOS run decides itself.
_REFUSED_OPTIONS = {
    "durable": "DBOS runs are always durable",
    "output_type": "a Python type is not workflow input; validate the result's text instead",
    "output_mode": "a Python type is not workflow input; validate the result's text instead",
}


class DBOSAgent:
    """Runs of ``agent`` as DBOS workflows, registered under ``name``.

    ``await durable.run(session_id, input, **options)`` runs one to its
    result; ``start`` returns the workflow handle at once; ``result(run_id)``
    waits for a run (one that DBOS recovered, say). Run options are those
    of ``session.run`` that JSON can carry. A run under DBOS takes no
    ``steer``/``follow_up`` input and runs its tool calls one at a time (a
    replay must make the same steps in the same order).
    """

    agent: Agent
    name: str

    def __init__(self, agent: Agent, *, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("DBOSAgent name must be a non-empty string")
        existing = _AGENTS.get(name)
        if existing is not None and existing.agent is not agent:
            raise ConfigError(f"a different agent is already registered as DBOSAgent {name!r}")
        self.agent = agent
        self.name = name
        self._listeners: list[AgentEventListener] = []
        _AGENTS[name] = self

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event of this agent's DBOS runs
        in this process (recovered ones included); returns an unsubscribe."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def start(
        self,
        session_id: str,
        input: str | Message | Sequence[Message],
        *,
        run_id: str | None = None,
        **options: Any,
    ) -> WorkflowHandleAsync[dict[str, Any]]:
        """Start a run as a DBOS workflow and return its handle. Starting an
        existing ``run_id`` again returns that run's handle (DBOS workflow
        ids are idempotency keys): it never runs twice."""
        check_run_option_names(options)
        for option, why in _REFUSED_OPTIONS.items():
            if option in options:
                raise ConfigError(f"run option {option} is not available under DBOS: {why}")
        try:
            encoded_options = json.dumps(options)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"DBOS run options must be JSON data: {exc}") from None
        messages = normalize_input(input)
        self.agent.create_session(session_id)  # refuses a bad session id now, not in the workflow
        redactor = self.agent.config.redactor
        if len(redactor):
            # DBOS keeps workflow input in its system database. The input is
            # redacted as the session stores it (the model sees the stored
            # copy either way); options are not redacted but refused.
            if redactor.contains(encoded_options):
                raise ConfigError(
                    "DBOS run options hold a configured secret, and DBOS would store them"
                )
            messages = redact_keeping_ids(messages, redactor)
        if run_id is None:
            run_id = f"run_{uuid.uuid4().hex[:16]}"
        elif not isinstance(run_id, str) or not run_id:
            raise ConfigError("run_id must be a non-empty string")
        with SetWorkflowID(run_id):
            return await DBOS.start_workflow_async(
                _prism_run, self.name, session_id, messages, dict(options)
            )

    async def run(
        self,
        session_id: str,
        input: str | Message | Sequence[Message],
        *,
        run_id: str | None = None,
        **options: Any,
    ) -> RunResult:
        """Run to the end (as a DBOS workflow) and return the result; the
        run's error is raised as ``session.run`` would raise it."""
        handle = await self.start(session_id, input, run_id=run_id, **options)
        return result_from_record(await handle.get_result())

    async def decide(self, session_id: str, approval_id: str, decision: Any) -> str:
        """Answer an approval a DBOS run of ``session_id`` waits on (from an
        ``approval_requested`` event, or ``prism.approvals.pending_approvals``):
        ``ApprovalDecision.approve()/deny(reason)/edit(arguments=...)``,
        True/False or "approve"/"deny". The decision goes to the run with
        DBOS ``send`` (reason and arguments redacted, as DBOS stores them);
        the run goes on from there, on whichever process holds it. Returns
        the run id. An id the session's run does not wait on raises
        ``ApprovalDecisionError`` and sends nothing."""
        normalized = normalize_decision(approval_id, decision)
        if normalized.kind == "edit" and normalized.arguments is None:
            raise ApprovalDecisionError(
                "under DBOS an edit carries edited arguments (an execution action is not sent)"
            )
        session = self.agent.create_session(session_id)
        point = find_resume_point(await session.branch_entries(), lambda _field, _why: None)
        checkpoint = point.checkpoint if point is not None else None
        waiting = (
            []
            if checkpoint is None or checkpoint.engine != DBOSJournal.engine
            else [a["id"] for a in checkpoint.pending_approvals]
        )
        if approval_id not in waiting or checkpoint is None or checkpoint.run_id is None:
            listing = ", ".join(waiting) or "none"
            raise ApprovalDecisionError(
                f"approval {approval_id[:100]!r} is not one a DBOS run of session"
                f" {session_id!r} waits on (unknown, another session's, or already decided);"
                f" waiting: {listing}. Nothing was sent."
            )
        redactor = self.agent.config.redactor
        message: dict[str, Any] = {
            "kind": normalized.kind,
            "reason": redactor.redact_text(normalized.reason),
        }
        if normalized.arguments is not None:
            message["arguments"] = redact_keeping_ids(dict(normalized.arguments), redactor)
        await DBOS.send_async(
            checkpoint.run_id,
            message,
            topic=approval_topic(approval_id),
            idempotency_key=f"{approval_id}.decision",
        )
        return checkpoint.run_id

    @staticmethod
    async def result(run_id: str, *, polling_interval_sec: float | None = None) -> RunResult:
        """Wait for the run ``run_id`` (started here or anywhere that shares
        the system database, or recovered by DBOS) and return its result.
        ``polling_interval_sec`` is how often DBOS checks (its default when
        None)."""
        handle: WorkflowHandleAsync[dict[str, Any]] = await DBOS.retrieve_workflow_async(run_id)
        if polling_interval_sec is None:
            record = await handle.get_result()
        else:
            record = await handle.get_result(polling_interval_sec=polling_interval_sec)
        return result_from_record(record)


async def recover_runs(executor_id: str) -> list[str]:
    """Hand the unfinished Prism runs of a dead DBOS executor (a worker of a
    fleet that will not come back with its executor id) to the fleet: each is
    enqueued on DBOS's internal queue, and whichever live worker dequeues it
    replays it. Returns the run ids. Only for executors that are really
    gone: a live one would go on running its runs too (the session lease
    then refuses the second execution). A worker that restarts with its own
    executor id needs none of this: DBOS recovers its runs at launch."""
    return await resume_pending(WORKFLOW_NAME, executor_id)
