"""Running a workflow durably: ``run_workflow`` and ``resume_workflow``.

One writer per workflow: a run or resume holds the store's session lease of
the workflow id for as long as it drives the steps (a second driver, in any
process, gets ``SessionBusyError``). Each step boundary is one record
(``prism.workflows.log``); a resume reads them back and continues at the
first step without a ``done`` record.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from pydantic import TypeAdapter, ValidationError

from prism.approvals import ApprovalDecision, ApprovalDecisionError
from prism.errors import PrismError
from prism.security import create_redactor
from prism.stores import SessionStore, claim_session
from prism.tools import create_tool_registry, dispatch_tool_call
from prism.workflows.context import AgentRunPaused, StepContext
from prism.workflows.errors import (
    LoopLimitError,
    StepInterruptedError,
    StepTypeError,
    WorkflowChangedError,
    WorkflowError,
    WorkflowStepError,
)
from prism.workflows.graph import END, Loop, Route, Step, Workflow, loop_key
from prism.workflows.log import FORMAT_VERSION, Replayed, WorkflowLog, replay

__all__ = ["WorkflowResult", "resume_workflow", "run_workflow"]

_ANY: TypeAdapter[Any] = TypeAdapter(Any)
_WIDENING = (float, complex)


@dataclass(frozen=True, slots=True)
class WorkflowResult:
    """How a run or resume ended: ``completed`` with the ``output`` (the
    value the last step passed to ``END``), or ``paused`` waiting on
    ``pending_approvals`` (answer them with ``resume_workflow(decisions=...)``)."""

    workflow_id: str
    status: Literal["completed", "paused"]
    output: Any = None
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def paused(self) -> bool:
        return self.status == "paused"


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
            f"workflow {workflow.name!r}: the input is not a {_type_name(first.input_type)}"
            f" (the input of its start step {first.name!r}): {_first_problem(error)}"
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
        await log.write(
            {
                "t": "start",
                "v": FORMAT_VERSION,
                "workflow": workflow.name,
                "first": first.name,
                "input": first.input_adapter.dump_python(value, mode="json"),
                "steps": {name: step.fingerprint for name, step in workflow.steps.items()},
            }
        )
        state = Replayed(step=first.name, via=(first.name, "in"))
        return await _Driver(workflow, log, state, {}).drive(value)


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
        value = _load(workflow, state.via, state.value)
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
        return await _Driver(workflow, log, state, answers).drive(value)


def _finished(workflow_id: str, end: dict[str, Any], workflow: Workflow) -> WorkflowResult:
    if end.get("status") == "completed":
        via = end.get("via")
        output = _load(workflow, (str(via[0]), str(via[1])) if via else None, end.get("value"))
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
    raise ApprovalDecisionError(
        f"decision for {key!r} must be an ApprovalDecision, True/False or 'approve'/'deny'"
    )


def _decision_json(decision: ApprovalDecision) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": decision.kind, "reason": decision.reason}
    if decision.arguments is not None:
        out["arguments"] = dict(decision.arguments)
    return out


def _decision_from(data: Mapping[str, Any]) -> ApprovalDecision:
    return ApprovalDecision(str(data["kind"]), str(data.get("reason", "")), data.get("arguments"))  # type: ignore[arg-type]


def _approval_id(workflow_id: str, seq: int, step: str, what: str) -> str:
    digest = hashlib.sha256(f"{workflow_id}\0{seq}\0{step}\0{what}".encode()).hexdigest()
    return f"approval_{digest[:20]}"


def _adapter(workflow: Workflow, via: tuple[str, str] | None) -> TypeAdapter[Any]:
    if via is None or via[0] not in workflow.steps:
        return _ANY
    step = workflow.steps[via[0]]
    if via[1] == "out" and step.output_adapter is not None:
        return step.output_adapter
    return step.input_adapter if via[1] == "in" else _ANY


def _load(workflow: Workflow, via: tuple[str, str] | None, data: Any) -> Any:
    return _adapter(workflow, via).validate_python(data)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or repr(tp)


def _first_problem(error: ValidationError) -> str:
    problem = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in problem.get("loc", ())) or "value"
    return f"{where}: {problem.get('msg')}"


class _Paused(Exception):
    def __init__(self, approvals: list[dict[str, Any]]) -> None:
        super().__init__("paused")
        self.approvals = approvals


class _Driver:
    """Drives the steps from a replayed position; one per run/resume."""

    def __init__(
        self,
        workflow: Workflow,
        log: WorkflowLog,
        state: Replayed,
        answers: dict[str, ApprovalDecision],
    ) -> None:
        self.workflow = workflow
        self.log = log
        self.state = state
        self.answers = answers
        self.decided = {k: _decision_from(v) for k, v in state.decided.items()}

    async def drive(self, value: Any) -> WorkflowResult:
        state = self.state
        while True:
            step = self.workflow.steps[str(state.step)]
            try:
                value, target = await self._one(step, value)
            except _Paused as paused:
                return await self._pause(step, paused.approvals)
            except AgentRunPaused as paused:
                approvals = [
                    {**a, "step": step.name, "sessionId": paused.session_id}
                    for a in paused.approvals
                ]
                return await self._pause(step, approvals)
            except ApprovalDecisionError:
                raise  # a decision the agent's run refused: nothing ran, the pause stands
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self.log.write({"t": "cancelled", "seq": state.seq, "step": step.name})
                raise
            except WorkflowError as error:
                await self._fail(step, error)
                raise
            except Exception as error:
                await self._fail(step, error)
                raise WorkflowStepError(
                    f"step {step.name!r} of workflow {self.workflow.name!r} failed:"
                    f" {_describe(error)}",
                    step=step.name,
                ) from error
            if target is None:
                await self.log.write(
                    {
                        "t": "end",
                        "status": "completed",
                        "value": state.value,
                        "via": list(state.via or ()),
                    }
                )
                return WorkflowResult(self.log.workflow_id, "completed", value)
            state.step = target
            state.begins = 0
            state.agent_calls = {}
            state.paused = None
            self.decided = {}

    async def _one(self, step: Step, value: Any) -> tuple[Any, str | None]:
        """Run one step and record its ``done``; the value and the next step."""
        state = self.state
        decision = None
        if step.kind == "decision":
            decision = await self._decision(step, value, "decision")
        if not step.idempotent:
            if state.begins:
                interrupted = await self._decision(step, value, f"interrupted:{state.begins}")
                if interrupted.kind == "deny":
                    raise StepInterruptedError(
                        f"step {step.name!r} started and did not finish (its process died);"
                        f" not run again: {interrupted.reason}",
                        step=step.name,
                    )
            await self.log.write({"t": "begin", "seq": state.seq, "step": step.name})
            state.begins += 1
        agent_answers: dict[str, dict[str, Any]] = {}
        for approval in (state.paused or {}).get("approvals", []):
            session = approval.get("sessionId")
            if session is not None and approval["id"] in self.answers:
                agent_answers.setdefault(session, {})[approval["id"]] = self.answers[approval["id"]]
        ctx = StepContext(self.log, step.name, state.seq, state.agent_calls, agent_answers)
        out = await _call(step, ctx, value, decision)
        label, passed, via = self._checked(step, value, out)
        target, loops = self._follow(step, label)
        data = _adapter(self.workflow, via).dump_python(passed, mode="json")
        record: dict[str, Any] = {
            "t": "done",
            "seq": state.seq,
            "step": step.name,
            "value": data,
            "via": list(via),
            "next": target,
            "loops": loops,
        }
        if step.routed:
            record["label"] = label
        await self.log.write(record)
        state.seq += 1
        state.value, state.via, state.loops = data, via, loops
        return passed, target

    async def _decision(self, step: Step, value: Any, what: str) -> ApprovalDecision:
        """The human's answer to this step's question, recorded before it is
        acted on; without one the workflow pauses."""
        approval_id = _approval_id(self.log.workflow_id, self.state.seq, step.name, what)
        if approval_id in self.decided:
            return self.decided[approval_id]
        answer = self.answers.get(approval_id)
        if answer is None:
            raise _Paused([self._request(step, value, what, approval_id)])
        await self.log.write(
            {
                "t": "decided",
                "seq": self.state.seq,
                "step": step.name,
                "decisions": {approval_id: _decision_json(answer)},
            }
        )
        self.decided[approval_id] = answer
        return answer

    def _request(self, step: Step, value: Any, what: str, approval_id: str) -> dict[str, Any]:
        if what == "decision":
            question = step.options["question"]
            reason = question(value) if callable(question) else str(question)
        else:
            reason = (
                f"step {step.name!r} started and did not finish (its process died); approve to"
                " run it again, deny to fail the workflow"
            )
        return {
            "id": approval_id,
            "step": step.name,
            "reason": reason,
            "action": {
                "kind": "workflow_step",
                "workflow": self.workflow.name,
                "step": step.name,
                "why": "decision" if what == "decision" else "interrupted",
            },
            "arguments": step.input_adapter.dump_python(value, mode="json"),
        }

    def _checked(self, step: Step, value: Any, out: Any) -> tuple[str, Any, tuple[str, str]]:
        """(route label, value passed on, adapter that reads it back)."""
        if step.kind == "gate":
            label, passed = (out.label, out.value) if isinstance(out, Route) else (out, value)
            if not isinstance(label, str) or label not in step.edges:
                raise StepTypeError(
                    f"gate {step.name!r} returned {label!r}; its routes are {sorted(step.edges)}",
                    step=step.name,
                )
            if not isinstance(out, Route):
                return label, passed, (step.name, "in")
            target = _plain_target(step.edges[label])
            if target is None:
                return label, passed, ("", "")
            return (
                label,
                self._typed(self.workflow.steps[target], "in", passed, step.name),
                (target, "in"),
            )
        assert step.output_adapter is not None
        passed = self._typed(step, "out", out, step.name)
        if step.kind == "decision" and step.routed:
            assert isinstance(value, object)
            label = self._last_decision_kind(step)
        else:
            label = "next"
        return label, passed, (step.name, "out")

    def _last_decision_kind(self, step: Step) -> str:
        approval_id = _approval_id(self.log.workflow_id, self.state.seq, step.name, "decision")
        kind = self.decided[approval_id].kind
        if kind not in step.edges:
            raise WorkflowError(
                f"decision step {step.name!r} got a {kind!r} decision and has no route for it;"
                f" its routes are {sorted(step.edges)}",
                code="workflow_no_route",
                step=step.name,
            )
        return kind

    def _typed(self, step: Step, side: str, value: Any, source: str) -> Any:
        adapter = step.output_adapter if side == "out" else step.input_adapter
        assert adapter is not None
        expected = step.output_type if side == "out" else step.input_type
        what = "returned" if side == "out" else f"routed to {step.name!r}"
        # Strict pydantic still builds a model from a dict; a declared class
        # means an instance of it (an int where a float is declared is fine).
        if (
            isinstance(expected, type)
            and expected not in _WIDENING
            and not isinstance(value, expected)
        ):
            raise StepTypeError(
                f"step {source!r} {what} a {type(value).__name__} where"
                f" {_type_name(expected)} is declared",
                step=source,
            )
        try:
            return adapter.validate_python(value, strict=True)
        except ValidationError as error:
            raise StepTypeError(
                f"step {source!r} {what} a {type(value).__name__} where"
                f" {_type_name(expected)} is declared: {_first_problem(error)}",
                step=source,
            ) from None

    def _follow(self, step: Step, label: str) -> tuple[str | None, dict[str, int]]:
        """The next step along ``label`` and the loop counters after taking it."""
        target = step.edges[label]
        loops = dict(self.state.loops)
        if not isinstance(target, Loop):
            return (None if target is END else target), loops
        key = loop_key(step.name, label)
        count = loops.get(key, 0)
        if count >= target.max:
            if target.then is None:
                raise LoopLimitError(
                    f"loop {step.name!r} -> {target.target!r} ({label!r}) reached its maximum"
                    f" of {target.max} and has no then= step",
                    step=step.name,
                )
            loops.pop(key, None)
            return (None if target.then is END else target.then), loops
        loops[key] = count + 1
        for inner in self.workflow.loop_resets.get(key, ()):
            loops.pop(inner, None)
        return target.target, loops

    async def _pause(self, step: Step, approvals: list[dict[str, Any]]) -> WorkflowResult:
        state = self.state
        known = {a["id"] for a in (state.paused or {}).get("approvals", [])}
        if {a["id"] for a in approvals} != known:
            record = {"t": "paused", "seq": state.seq, "step": step.name, "approvals": approvals}
            await self.log.write(record)
            state.paused = record
        return WorkflowResult(self.log.workflow_id, "paused", None, approvals)

    async def _fail(self, step: Step, error: BaseException) -> None:
        info: dict[str, Any] = {"type": type(error).__name__, "message": _describe(error)}
        info["code"] = error.code if isinstance(error, PrismError) else "step_error"

        with anyio.CancelScope(shield=True):
            await self.log.write(
                {
                    "t": "end",
                    "status": "failed",
                    "seq": self.state.seq,
                    "step": step.name,
                    "error": info,
                }
            )


def _describe(error: BaseException) -> str:
    """A host exception's text may hold anything (a secret): only Prism's own
    messages, written not to, are kept; others are named by their type."""
    if isinstance(error, PrismError):
        return f"{type(error).__name__}: {error}"
    return type(error).__name__


def _plain_target(target: Any) -> str | None:
    if isinstance(target, Loop):
        return target.target
    return None if target is END else target


async def _call(step: Step, ctx: StepContext, value: Any, decision: ApprovalDecision | None) -> Any:
    args = [
        ctx if kind == "ctx" else decision if kind == "decision" else value
        for kind in step.parameters
    ]
    result = step.fn(*args)
    if inspect.isawaitable(result):
        result = await result
    if step.kind == "tool":
        result = await _run_tool(step, ctx, result)
    return result


async def _run_tool(step: Step, ctx: StepContext, arguments: Any) -> Any:
    tool = step.options["tool"]
    registry = create_tool_registry([tool])
    call = {"id": f"{ctx.workflow_id}:{ctx.seq}", "name": tool.name, "arguments": arguments}
    result: dict[str, Any] = dict(
        await dispatch_tool_call(call, registry=registry, redactor=create_redactor())  # type: ignore[arg-type]
    )
    if result.get("isError"):
        value = result.get("value")
        error: dict[str, Any] = value if isinstance(value, dict) else {}
        raise WorkflowError(
            f"tool {tool.name!r} of step {step.name!r} failed: {error.get('message', '')}",
            code=str(error.get("code") or "tool_error"),
            step=step.name,
        )
    return result
