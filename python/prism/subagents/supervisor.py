"""``create_supervisor``: a delegation tool that runs named child agents.

The model calls the tool with a child's name and a task. The child runs as
an agent session of its own on the parent's store (linked to the parent's
session, run and tool call), durable, under its budget, and its answer comes
back as the tool's result, bounded. Children of one tool round run in
parallel (the parent's ``tool_concurrency``) up to ``max_concurrency``.

Above the runtime: it uses only ``create_session``, ``run``, ``resume``,
``abort``, ``subscribe`` and ``append_custom``, and what the runtime hands
every tool (``ToolContext``). See docs/subagents.md.
"""

from __future__ import annotations

import inspect
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from prism.approvals import pending_approvals
from prism.errors import ConfigError, RunAbortedError
from prism.runtime import AgentEventListener, AgentSession, RunResult
from prism.security.approval import (
    ApprovalDecision,
    ApprovalRequiredError,
    granted_decision,
    granting,
)
from prism.subagents.delegation import (
    Delegation,
    Ended,
    TokenMeter,
    describe,
    ended_from_checkpoint,
    link_data,
    make_agent,
    usage_of,
)
from prism.subagents.errors import (
    DelegationRejectedError,
    SubagentAbortedError,
    SubagentError,
    SubagentFailedError,
    UnknownChildError,
)
from prism.subagents.reconcile import unsettled_delegations
from prism.subagents.records import (
    LINK_TYPE,
    OUTCOME_TYPE,
    ChildRecord,
    delegation_id_for,
    read_child_record,
)
from prism.subagents.spec import (
    Budget,
    ChildContext,
    ChildSpec,
    DelegationOutcome,
    SupervisorHooks,
)
from prism.tools import ToolDefinition, define_tool
from prism.tools.context import ToolArgumentsError, ToolContext

__all__ = ["Summarize", "Supervisor", "create_supervisor"]

Summarize = Callable[[str, int], "str | Awaitable[str]"]
"""``summarize(answer, limit)``: a shorter answer for the parent."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_TASK_PREVIEW = 200
_TRACKED_RUNS = 4096
_NO_BUDGET = Budget()


class Supervisor:
    """The delegation tool (``supervisor.tool``) and the children it runs."""

    def __init__(
        self,
        children: Mapping[str, ChildSpec],
        *,
        max_concurrency: int,
        budget: Budget,
        hooks: SupervisorHooks,
        tool_name: str,
        max_answer_chars: int,
        summarize: Summarize | None,
    ) -> None:
        self.children = dict(children)
        self.max_concurrency = max_concurrency
        self.budget = budget
        self.hooks = hooks
        self.max_answer_chars = max_answer_chars
        self._summarize = summarize
        self._running = 0
        # Delegations started per parent run; the oldest runs drop out first
        # (a run this old is long over), so a long-lived process stays bounded.
        self._delegations: OrderedDict[tuple[str, str | None], int] = OrderedDict()
        self._active: dict[str, AgentSession] = {}
        self._abort_reasons: dict[str, str] = {}
        self._listeners: list[AgentEventListener] = []
        self.tool: ToolDefinition = define_tool(
            tool_name,
            self._execute,
            description=self._description(),
            parameters={
                "type": "object",
                "properties": {
                    "child": {"type": "string", "description": "which sub-agent: " + self._names()},
                    "task": {"type": "string", "description": "what it should do, self-contained"},
                },
                "required": ["child", "task"],
                "additionalProperties": False,
            },
            # Re-running a delegation is safe: it finds its child by its
            # delegation id and returns, resumes or starts it, never twice.
            idempotent=True,
        )

    # --- public surface -----------------------------------------------------------

    @property
    def running(self) -> int:
        """Children running in this process right now."""
        return self._running

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        """Call ``listener`` with every event of every child session this
        supervisor runs from now on (their ``sessionId`` is the child's). Pass
        a ``prism.telemetry`` instrumentation to nest children's spans."""
        if not callable(listener):
            raise TypeError("event listener must be callable")
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def abort(self, delegation_id: str, reason: str | None = None) -> bool:
        """Abort a running child (outcome ``abort``); False if none runs."""
        session = self._active.get(delegation_id)
        if session is None:
            return False
        self._abort_reasons[delegation_id] = reason or "aborted by the supervisor"
        return session.abort(reason)

    async def reconcile(self, parent: AgentSession) -> list[str]:
        """Settle the delegations of ``parent`` that the runtime answered
        without running this tool: a delegation whose approval was denied,
        or a paused parent closed by a new ``run()``. Each such child,
        still suspended, gets the terminal outcome ``abort`` (its outcome
        entry, the ``after`` hook once). Returns their delegation ids;
        settled ones are skipped, so calling it again is a no-op."""
        settled: list[str] = []
        entries = await parent.branch_entries()
        for item in unsettled_delegations(parent.id, entries, self.tool.name):
            for delegation_id in item.candidates:
                record = read_child_record(await parent.store.list(delegation_id))
                link = record.link or {}
                if link.get("toolCallId") != item.tool_call_id or record.outcome is not None:
                    continue
                run_id = link.get("parentRunId")
                delegation = Delegation(
                    delegation_id=delegation_id,
                    child=item.child,
                    task=item.task,
                    tool_call_id=item.tool_call_id,
                    parent_session_id=parent.id,
                    parent_run_id=run_id if isinstance(run_id, str) else None,
                    store=parent.store,
                    emit=None,
                    granted=None,
                )
                child = parent.agent.create_session(delegation_id, store=parent.store)
                why = f"the parent answered the delegation without running it: {item.reason}"
                context = delegation.context(resumed=True)
                await self._conclude(delegation, context, child, Ended("abort", reason=why))
                settled.append(delegation_id)
        return settled

    # --- the tool -----------------------------------------------------------------

    async def _execute(self, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        delegation = self._delegation(arguments, ctx)
        spec = self.children.get(delegation.child)
        if spec is None:
            await self._reject(delegation, UnknownChildError(self._unknown(delegation.child)))
        assert spec is not None
        record = read_child_record(await delegation.store.list(delegation.delegation_id))
        if record.outcome is not None:
            return self._replay(delegation, record.outcome)
        if not record.exists:
            await self._admit(delegation)
        else:
            self._running += 1
        try:
            return await self._spawn_and_run(delegation, spec, record)
        finally:
            self._running -= 1

    def _delegation(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Delegation:
        child, task = arguments.get("child"), arguments.get("task")
        if not isinstance(child, str) or not isinstance(task, str) or not task.strip():
            raise ToolArgumentsError("delegate needs a child name and a non-empty task")
        if ctx.session_id is None or ctx.tool_call_id is None or ctx.store is None:
            raise SubagentError(
                "the delegation tool runs inside an agent run (it needs the calling session,"
                " its store and the tool call id)"
            )
        return Delegation(
            delegation_id=delegation_id_for(ctx.session_id, ctx.run_id, ctx.tool_call_id),
            child=child,
            task=task,
            tool_call_id=ctx.tool_call_id,
            parent_session_id=ctx.session_id,
            parent_run_id=ctx.run_id,
            store=ctx.store,
            emit=ctx.emit if ctx.event_sink is not None else None,
            # Read before anything runs: the child's own run must not see it.
            granted=granted_decision(),
        )

    async def _admit(self, delegation: Delegation) -> None:
        """Pre-spawn checks; a refusal is the delegation's terminal outcome."""
        if self._running >= self.max_concurrency:
            await self._reject(
                delegation,
                DelegationRejectedError(
                    f"cannot start sub-agent {delegation.child!r}: {self._running} children are"
                    f" running and max_concurrency is {self.max_concurrency}; wait for one to"
                    " finish, then delegate again"
                ),
            )
        limit = self.budget.max_delegations
        key = (delegation.parent_session_id, delegation.parent_run_id)
        started = self._delegations.get(key, 0)
        if limit is not None and started >= limit:
            await self._reject(
                delegation,
                DelegationRejectedError(
                    f"cannot start sub-agent {delegation.child!r}: this run already delegated"
                    f" {started} tasks and the budget allows max_delegations={limit}"
                ),
            )
        self._delegations[key] = started + 1
        self._delegations.move_to_end(key)
        if len(self._delegations) > _TRACKED_RUNS:
            self._delegations.popitem(last=False)
        self._running += 1

    async def _spawn_and_run(
        self, delegation: Delegation, spec: ChildSpec, record: ChildRecord
    ) -> dict[str, Any]:
        context = delegation.context(resumed=record.exists)
        try:
            agent = await make_agent(spec, context)
        except Exception as error:
            why = f"the agent factory of sub-agent {delegation.child!r} failed: {describe(error)}"
            if not record.exists:
                await self._reject(delegation, DelegationRejectedError(why), context)
            failed = Ended("failure", reason=why)
            return self._replay(delegation, await self._conclude(delegation, context, None, failed))
        # The agent's own store needs no protocol check (a costly isinstance).
        store = None if agent.config.store is delegation.store else delegation.store
        session = agent.create_session(delegation.delegation_id, store=store)
        relay = session.subscribe(self._relay)
        self._active[delegation.delegation_id] = session
        try:
            if not record.exists:
                await session.append_custom(LINK_TYPE, link_data(delegation))
            self._started(delegation, record.exists)
            ended = await self._drive(delegation, session, record, spec.budget or self.budget)
        except anyio.get_cancelled_exc_class():
            # The parent was aborted: the child's run ended with it.
            with anyio.CancelScope(shield=True):
                aborted = Ended("abort", reason="the parent run was aborted")
                await self._conclude(delegation, context, session, aborted)
            raise
        finally:
            relay()
            self._active.pop(delegation.delegation_id, None)
            self._abort_reasons.pop(delegation.delegation_id, None)
        return self._replay(delegation, await self._conclude(delegation, context, session, ended))

    async def _drive(
        self, delegation: Delegation, session: AgentSession, record: ChildRecord, budget: Budget
    ) -> Ended:
        if record.ended is not None:
            # Its run finished before a crash kept the outcome from being stored.
            return ended_from_checkpoint(record)
        meter = TokenMeter(session, budget.max_tokens)
        try:
            with anyio.move_on_after(budget.max_wall_seconds or float("inf")) as deadline:
                result = await self._attempt(delegation, session, record, budget)
        except RunAbortedError as error:
            reason = meter.over or self._abort_reasons.get(delegation.delegation_id)
            return Ended("abort", reason=reason or str(error), usage=usage_of(meter.used))
        except Exception as error:
            return Ended("failure", reason=describe(error), usage=usage_of(meter.used))
        finally:
            meter.detach()
        if deadline.cancelled_caught:
            reason = f"wall-time budget exceeded (max_wall_seconds={budget.max_wall_seconds})"
            return Ended("abort", reason=reason, usage=usage_of(meter.used))
        usage = dict(result.usage)
        if result.paused:
            return Ended("suspended", usage=usage, tool_rounds=result.tool_rounds, result=result)
        return Ended("success", result.text, usage=usage, tool_rounds=result.tool_rounds)

    async def _attempt(
        self, delegation: Delegation, session: AgentSession, record: ChildRecord, budget: Budget
    ) -> RunResult:
        options: dict[str, Any] = {"durable": True}
        if budget.max_tool_rounds is not None:
            options["max_tool_rounds"] = budget.max_tool_rounds
        decisions = await self._child_decisions(delegation, session) if record.exists else None
        # The parent's granted decision must not leak into the child's tools.
        with granting(None):
            if record.exists:
                result = await session.resume(decisions, **options)
                if result is not None:
                    return result
            return await session.run(delegation.task, **options)

    async def _child_decisions(
        self, delegation: Delegation, session: AgentSession
    ) -> dict[str, ApprovalDecision] | None:
        """The parent's decision on this delegation, applied to what the
        child waits on: approve or deny all of it, or one edit."""
        granted = delegation.granted
        if granted is None:
            return None
        waiting = await pending_approvals(session)
        if granted.kind == "edit" and len(waiting) != 1:
            raise SubagentError(
                f"an edit answers one approval; sub-agent {delegation.child!r} waits on"
                f" {len(waiting)} (approve or deny them together)"
            )
        return {approval["id"]: granted for approval in waiting}

    # --- endings ------------------------------------------------------------------

    async def _conclude(
        self,
        delegation: Delegation,
        context: ChildContext,
        session: AgentSession | None,
        ended: Ended,
    ) -> dict[str, Any]:
        """Suspend (raises), or settle a terminal outcome: the after hook,
        the outcome entry, the stopped event. Returns the outcome record."""
        if ended.outcome == "suspended":
            assert ended.result is not None
            self._suspend(delegation, ended.result)
        hook_problem = await self._after(delegation.outcome(ended, context))
        record: dict[str, Any] = {"outcome": ended.outcome, "toolRounds": ended.tool_rounds}
        record.update(text=ended.text, reason=ended.reason, usage=ended.usage)
        if hook_problem:
            record["hookError"] = hook_problem
        summary = await self._summary(ended.text)
        if summary is not None:
            record["summary"] = summary
        if session is not None:
            await session.append_custom(OUTCOME_TYPE, record)
        self._stopped(delegation, ended.outcome, ended.reason, usage=ended.usage)
        return record

    def _suspend(self, delegation: Delegation, result: RunResult) -> None:
        """The child waits for a human: so does the parent, on this call."""
        waiting = result.pending_approvals
        self._stopped(delegation, "suspended", pending=len(waiting))
        first = waiting[0] if waiting else {}
        raise ApprovalRequiredError(
            f"sub-agent {delegation.child!r} waits for approval: {first.get('reason', '')}",
            {
                "kind": "subagent",
                "delegationId": delegation.delegation_id,
                "child": delegation.child,
                "childSessionId": delegation.delegation_id,
                "approvals": [dict(approval) for approval in waiting],
            },
        )

    async def _reject(
        self, delegation: Delegation, error: SubagentError, context: ChildContext | None = None
    ) -> None:
        await self._after(delegation.outcome(Ended("rejected", reason=str(error)), context))
        self._stopped(delegation, "rejected", str(error), child_session=False)
        raise error

    async def _after(self, outcome: DelegationOutcome) -> str | None:
        after = self.hooks.after
        if after is None:
            return None
        try:
            with anyio.CancelScope(shield=True):
                value = after(outcome)
                if inspect.isawaitable(value):
                    await value
        except Exception as error:
            return f"the supervisor's after hook failed: {describe(error)}"
        return None

    def _replay(self, delegation: Delegation, record: Mapping[str, Any]) -> dict[str, Any]:
        """The tool's answer for a terminal record (stored or just written)."""
        outcome = str(record.get("outcome"))
        reason = str(record.get("reason") or "")
        where = f" (delegation {delegation.delegation_id}, its session keeps the details)"
        if outcome == "failure":
            raise SubagentFailedError(f"sub-agent {delegation.child!r} failed: {reason}{where}")
        if outcome == "abort":
            raise SubagentAbortedError(f"sub-agent {delegation.child!r} aborted: {reason}{where}")
        if outcome != "success":
            raise DelegationRejectedError(reason or f"delegation {outcome}")
        text = str(record.get("text") or "")
        value: dict[str, Any] = {
            "delegationId": delegation.delegation_id,
            "child": delegation.child,
            "sessionId": delegation.delegation_id,
            "outcome": "success",
            "answer": self._bounded(delegation, text, record.get("summary")),
        }
        if len(text) > self.max_answer_chars:
            value["truncated"] = True
            value["answerChars"] = len(text)
        if record.get("hookError"):
            value["hookError"] = record["hookError"]
        return value

    async def _summary(self, text: str) -> str | None:
        """The host's summary of a long answer (kept beside the full text)."""
        if self._summarize is None or len(text) <= self.max_answer_chars:
            return None
        made = self._summarize(text, self.max_answer_chars)
        if inspect.isawaitable(made):
            made = await made
        return str(made)

    def _bounded(self, delegation: Delegation, text: str, summary: Any) -> str:
        limit = self.max_answer_chars
        if len(text) <= limit:
            return text
        if isinstance(summary, str):
            return summary[:limit]
        note = (
            f"\n[answer truncated: {len(text)} characters; the whole answer is in"
            f" session {delegation.delegation_id}]"
        )
        return text[: max(0, limit - len(note))] + note

    # --- events -------------------------------------------------------------------

    def _relay(self, event: Any) -> None:
        for listener in tuple(self._listeners):
            listener(event)

    def _started(self, delegation: Delegation, resumed: bool) -> None:
        if delegation.emit is None:
            return
        delegation.emit(
            {
                "type": "subagent_started",
                "delegationId": delegation.delegation_id,
                "child": delegation.child,
                "childSessionId": delegation.delegation_id,
                "toolCallId": delegation.tool_call_id,
                "resumed": resumed,
                "task": delegation.task[:_TASK_PREVIEW],
            }
        )

    def _stopped(
        self,
        delegation: Delegation,
        outcome: str,
        reason: str = "",
        *,
        usage: Mapping[str, Any] | None = None,
        pending: int | None = None,
        child_session: bool = True,
    ) -> None:
        if delegation.emit is None:
            return
        event: dict[str, Any] = {
            "type": "subagent_stopped",
            "delegationId": delegation.delegation_id,
            "child": delegation.child,
            "toolCallId": delegation.tool_call_id,
            "outcome": outcome,
        }
        if child_session:
            event["childSessionId"] = delegation.delegation_id
        if reason:
            event["reason"] = reason
        if usage:
            event["usage"] = dict(usage)
        if pending is not None:
            event["pendingApprovals"] = pending
        delegation.emit(event)

    # --- text for the model ---------------------------------------------------------

    def _names(self) -> str:
        return ", ".join(sorted(self.children))

    def _unknown(self, name: str) -> str:
        return f"unknown sub-agent {name!r}; this supervisor has: {self._names()}"

    def _description(self) -> str:
        lines = [
            "Delegate a self-contained task to a sub-agent and get its answer back."
            " Several calls in one turn run in parallel. Sub-agents:"
        ]
        for name in sorted(self.children):
            about = self.children[name].description
            lines.append(f"- {name}: {about}" if about else f"- {name}")
        return "\n".join(lines)


def create_supervisor(
    *,
    children: Mapping[str, ChildSpec],
    max_concurrency: int = 4,
    budget: Budget | None = None,
    hooks: SupervisorHooks | Mapping[str, Any] | None = None,
    tool_name: str = "delegate",
    max_answer_chars: int = 4000,
    summarize: Summarize | None = None,
) -> Supervisor:
    """A :class:`Supervisor`; give ``supervisor.tool`` to the parent agent
    (durable, for suspend and resume). ``ConfigError`` names a bad option."""
    if not isinstance(children, Mapping) or not children:
        raise ConfigError("create_supervisor needs children: a non-empty {name: ChildSpec} mapping")
    for name, spec in children.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"child name {name!r} must start with a letter and hold only letters, digits,"
                " '_', '.', '-' (at most 64)"
            )
        if not isinstance(spec, ChildSpec):
            raise ConfigError(f"child {name!r} must be a ChildSpec, got {type(spec).__name__}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise ConfigError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
    if max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency}")
    if budget is not None and not isinstance(budget, Budget):
        raise ConfigError("budget must be a Budget or None")
    if isinstance(hooks, Mapping):
        unknown = sorted(set(hooks) - {"after"})
        if unknown:
            raise ConfigError(f"unknown supervisor hook(s) {unknown}; expected ['after']")
        hooks = SupervisorHooks(after=hooks.get("after"))
    if hooks is not None and not isinstance(hooks, SupervisorHooks):
        raise ConfigError("hooks must be SupervisorHooks, a {'after': fn} mapping or None")
    if not isinstance(tool_name, str) or not _NAME.fullmatch(tool_name):
        raise ConfigError(f"tool_name must be a tool name such as 'delegate', got {tool_name!r}")
    if isinstance(max_answer_chars, bool) or not isinstance(max_answer_chars, int):
        raise ConfigError("max_answer_chars must be an integer of at least 200")
    if max_answer_chars < 200:
        raise ConfigError(f"max_answer_chars must be at least 200, got {max_answer_chars}")
    if summarize is not None and not callable(summarize):
        raise ConfigError("summarize must be callable (answer, limit) -> str")
    return Supervisor(
        children,
        max_concurrency=max_concurrency,
        budget=budget or _NO_BUDGET,
        hooks=hooks or SupervisorHooks(),
        tool_name=tool_name,
        max_answer_chars=max_answer_chars,
        summarize=summarize,
    )
