"""Driving a workflow's steps from a replayed position (``Driver``), and
the helpers it shares with ``engine``: typing values, decisions, results."""

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
from prism.tools import create_tool_registry, dispatch_tool_call
from prism.workflows.context import AgentRunPaused, StepContext
from prism.workflows.errors import (
    LoopLimitError,
    StepInterruptedError,
    StepTypeError,
    WorkflowError,
    WorkflowStepError,
)
from prism.workflows.graph import END, Loop, Route, Step, Workflow, loop_key
from prism.workflows.log import Replayed, WorkflowLog

__all__ = ["WorkflowResult"]

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


def _decision_json(decision: ApprovalDecision) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": decision.kind, "reason": decision.reason}
    if decision.arguments is not None:
        out["arguments"] = dict(decision.arguments)
    return out


def decision_from(data: Mapping[str, Any]) -> ApprovalDecision:
    return ApprovalDecision(str(data["kind"]), str(data.get("reason", "")), data.get("arguments"))  # type: ignore[arg-type]


def _approval_id(workflow_id: str, seq: int, step: str, what: str) -> str:
    digest = hashlib.sha256(f"{workflow_id}\0{seq}\0{step}\0{what}".encode()).hexdigest()
    return f"approval_{digest[:20]}"


def value_adapter(workflow: Workflow, via: tuple[str, str] | None) -> TypeAdapter[Any]:
    if via is None or via[0] not in workflow.steps:
        return _ANY
    step = workflow.steps[via[0]]
    if via[1] == "out" and step.output_adapter is not None:
        return step.output_adapter
    return step.input_adapter if via[1] == "in" else _ANY


def load_value(workflow: Workflow, via: tuple[str, str] | None, data: Any) -> Any:
    return value_adapter(workflow, via).validate_python(data)


def type_name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or repr(tp)


def first_problem(error: ValidationError) -> str:
    problem = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in problem.get("loc", ())) or "value"
    return f"{where}: {problem.get('msg')}"


class _Paused(Exception):
    def __init__(self, approvals: list[dict[str, Any]]) -> None:
        super().__init__("paused")
        self.approvals = approvals


class Driver:
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
        self.decided = {k: decision_from(v) for k, v in state.decided.items()}

    async def drive(self, value: Any, limit: int | None = None) -> WorkflowResult | None:
        """Run steps until the workflow completes or pauses (its result), or
        until ``limit`` steps finished (None: the DBOS integration's one step
        at a time)."""
        state = self.state
        while True:
            if limit is not None:
                if limit == 0:
                    return None
                limit -= 1
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
        data = value_adapter(self.workflow, via).dump_python(passed, mode="json")
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
                f" {type_name(expected)} is declared",
                step=source,
            )
        try:
            return adapter.validate_python(value, strict=True)
        except ValidationError as error:
            raise StepTypeError(
                f"step {source!r} {what} a {type(value).__name__} where"
                f" {type_name(expected)} is declared: {first_problem(error)}",
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
