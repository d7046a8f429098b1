"""Durability as a layer: step runners that checkpoint the loop's steps.

``DurableSteps`` (``durable=True``) runs the same steps as the plain
``Steps`` and adds, from outside the loop, what a resume needs: a
``prism.checkpoint`` entry at every step boundary (folded into the batch
the step appends anyway), the assistant turn stored before its tools run,
each tool result stored as it arrives, non-idempotent calls marked started
before they run, and a closing write when the run fails. ``JournaledSteps``
runs those steps through a replaying engine's journal (``prism.durable``):
recorded provider turns, tool calls and compactions, replay-safe appends,
one tool at a time. The checkpoint format is ``prism.runtime.durable``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from prism.assembly.groups import tool_result_message
from prism.attention.calibration_entry import CHECKPOINT_FIELD
from prism.contracts import Message, SessionEntry, ToolCall, ToolResult
from prism.errors import error_info
from prism.runtime.approvals import approval_request, is_approval_request
from prism.runtime.calibrate import calibration_stored
from prism.runtime.checkpoint_state import carried_state
from prism.runtime.context import Run, RunJournal, RunPort, RunProgress, RunSettings
from prism.runtime.durable import (
    CHECKPOINT_CUSTOM_TYPE,
    CHECKPOINT_VERSION,
    ResumePoint,
    answered_output,
)
from prism.runtime.steps import Steps, error_result
from prism.security.approval import ApprovalDecision, granting
from prism.tools.content import elide_image_data
from prism.tools.dispatch import POLICY_DENIED, ExecuteCall

__all__ = ["DurableSteps", "JournaledSteps", "closing_result", "interrupted_result"]

T = TypeVar("T")


def interrupted_result(call: ToolCall) -> ToolResult:
    """What the model is told about a non-idempotent call that started
    before a crash and left no result: it is never silently run again."""
    return error_result(
        call,
        f"Tool {call['name']!r} was interrupted (the run's process ended while it ran);"
        " it is not marked idempotent, so it was not run again",
        "interrupted",
    )


def closing_result(call: ToolCall, why: str) -> ToolResult:
    """The result a closed run gives a call it recorded but never answered."""
    return error_result(call, f"Tool call not completed: {why}", "run_ended")


def decision_from_record(raw: Any) -> ApprovalDecision | None:
    """An engine's recorded decision (``{"kind", "reason"?, "arguments"?}``)
    back as an ``ApprovalDecision``; None for no decision. A malformed one
    is a denial: a decision nobody can read never runs the call."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in ("approve", "deny", "edit"):
        return ApprovalDecision.deny("the recorded decision is malformed")
    given = raw.get("reason")
    reason = given if isinstance(given, str) else ""
    if raw["kind"] == "approve":
        return ApprovalDecision.approve(reason)
    arguments = raw.get("arguments")
    if raw["kind"] == "edit" and isinstance(arguments, dict):
        return ApprovalDecision.edit(arguments=arguments, reason=reason)
    if raw["kind"] == "edit":
        return ApprovalDecision.deny("the recorded edit has no arguments")
    return ApprovalDecision.deny(reason)


def checkpoint_entry(session_id: str, entry_id: str, data: dict[str, Any]) -> SessionEntry:
    entry: dict[str, Any] = {
        "id": entry_id,
        "sessionId": session_id,
        "parentId": None,
        "kind": "custom",
        "customType": CHECKPOINT_CUSTOM_TYPE,
        "data": data,
    }
    return entry  # type: ignore[return-value]


class DurableSteps(Steps):
    """The loop's steps with a checkpoint at every boundary (docs/durable.md)."""

    durable = True

    __slots__ = (
        "approvals",
        "decided",
        "decisions",
        "ended",
        "granted",
        "pending",
        "started",
        "step",
    )

    def __init__(self, settings: RunSettings, port: RunPort, progress: RunProgress) -> None:
        super().__init__(settings, port, progress)
        self.step = 0
        # Tool calls recorded in the store without a result yet, and which of
        # them have started: what a checkpoint says a resume must settle.
        self.pending: list[ToolCall] = []
        self.started: set[str] = set()
        self.ended = False  # the newest checkpoint written is the run's "end"
        # Approval requests waiting for a human (stored in every checkpoint
        # while they wait), the decisions a resume brought (by approval id),
        # and the decision each approved call runs under (by tool call id).
        self.approvals: list[dict[str, Any]] = []
        self.decisions: dict[str, ApprovalDecision] = {}
        self.granted: dict[str, ApprovalDecision] = {}
        # Stamped on a decided call's result (the attention compiler never
        # stubs a result carrying approval metadata).
        self.decided: dict[str, dict[str, str]] = {}

    @property
    def engine(self) -> str | None:
        """The replaying engine that owns the run (None: ``session.resume()``)."""
        return None

    @property
    def carries_session_state(self) -> bool:
        return self.settings.persist_state

    # --- checkpoints --------------------------------------------------------------------

    def boundary_entries(self, boundary: str, entries: list[SessionEntry]) -> list[SessionEntry]:
        # The run's first checkpoint says where the run starts on the branch.
        start = entries[0]["id"] if self.step == 0 and entries else None
        status = "completed" if boundary == "end" else None
        return [self.checkpoint(boundary, self.port.new_entry_id(), status, start)]

    def checkpoint(
        self, phase: str, entry_id: str, status: str | None = None, start: str | None = None
    ) -> SessionEntry:
        """The ``prism.checkpoint`` entry for the step ending now."""
        self.step += 1
        self.ended = phase == "end"
        progress = self.progress
        # Empty lists and zero counters are left out: a checkpoint per step
        # stays a few dozen bytes.
        data: dict[str, Any] = {
            "version": CHECKPOINT_VERSION,
            "runId": self.port.run_id,
            "step": self.step,
            "phase": phase,
        }
        if self.pending:
            data["pendingToolCalls"] = [dict(call) for call in self.pending]
        if self.started:
            data["startedToolCallIds"] = sorted(self.started)
        if self.approvals:
            data["pendingApprovals"] = self.approvals
        if progress.tool_rounds:
            data["toolRounds"] = progress.tool_rounds
        if progress.total_tool_rounds:
            data["totalToolRounds"] = progress.total_tool_rounds
        inbox = self.port.inbox
        if inbox.has_queued():
            steering, follow_ups = inbox.queued()
            if steering:
                data["steering"] = steering
            if follow_ups:
                data["followUps"] = follow_ups
        if status is not None:
            data["status"] = status
        if start is not None:
            data["startEntryId"] = start
        if self.engine is not None:
            data["engine"] = self.engine
        if self.settings.persist_state:
            data["sessionState"] = self._session_state()
        if progress.calibration is not None:
            # The turn's calibration record rides in its checkpoint, so a
            # replay's chain of entries never depends on what it learned.
            data[CHECKPOINT_FIELD] = progress.calibration
            calibration_stored(self.port.attention_state, entry_id, progress.calibration)
            progress.calibration = None
        holders = self.settings.config.checkpoint_state
        if holders:
            carried = carried_state(holders, self.port.session_id)
            if carried is not None:
                data["state"] = carried
        return checkpoint_entry(self.port.session_id, entry_id, data)

    def _session_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        frontier = self.port.frontier
        if frontier is not None:
            state["attentionSticky"] = frontier.to_json()
        if self.settings.model is not None:
            state["model"] = dict(self.settings.model)
        return state

    async def checkpoint_only(self, phase: str, status: str | None = None) -> None:
        """A boundary with nothing else to append (``tool_start``, ``end``)."""
        await self.append([self.checkpoint(phase, self.port.new_entry_id(), status)])

    # --- tools --------------------------------------------------------------------------

    async def tool_round(
        self,
        message: Message,
        message_id: str,
        results: list[ToolResult | None],
        runnable: list[tuple[int, ToolCall]],
    ) -> Message:
        # The provider turn is recorded before any tool runs (with the
        # results already known), so a resume never requests it again.
        known = [tool_result_message(r) for r in results if r is not None]
        self.pending = [call for _, call in runnable]
        stored = await self.record([message, *known], "turn", first_id=message_id)
        await self.run_recording(list(self.pending))
        return stored[0]

    def is_idempotent(self, call: ToolCall) -> bool:
        definition = self.settings.config.tools.get(call["name"])
        return definition is not None and definition.idempotent

    async def run_recording(self, calls: list[ToolCall]) -> None:
        """Run ``calls`` recording each result as it arrives. A non-idempotent
        call is marked started in the store first (a checkpoint-only write),
        so a resume can tell "never started" (run it) from "interrupted"
        (answer it with an error); an idempotent one may simply run again."""

        async def on_start(_index: int, call: ToolCall) -> None:
            self.started.add(call["id"])
            if not self.is_idempotent(call):
                await self.checkpoint_only("tool_start")

        async def on_result(index: int, result: ToolResult) -> None:
            if is_approval_request(result):
                await self.on_approval(calls[index], result)
                return
            await self.record_result(result)

        if calls:
            await self.dispatch(calls, on_start, on_result)
        if calls and self.progress.pending_approvals:
            await self.checkpoint_only("approval")

    @property
    def can_pause(self) -> bool:
        """Whether a call that needs approval pauses the run (else its
        ``approval_required`` error is the call's result, failing closed)."""
        return True

    async def on_approval(self, call: ToolCall, result: ToolResult) -> None:
        """A call asked for a human before any side effect: the run pauses
        on it (``request_approval``), or, where it cannot, its
        ``approval_required`` error is its result (failing closed)."""
        if self.can_pause:
            self.request_approval(call, result)
        else:
            await self.record_result(result)

    def request_approval(self, call: ToolCall, result: ToolResult) -> None:
        """The call asked for a human before any side effect: it waits,
        unstarted, in the checkpoints; the run ends paused after the round."""
        self.started.discard(call["id"])
        request = approval_request(self.port.session_id, self.port.run_id, call, result)
        self.approvals.append(request)
        self.progress.pending_approvals = self.approvals
        self.port.emit({"type": "approval_requested", "approval": request})  # type: ignore[typeddict-item]

    def execute_call(self) -> ExecuteCall | None:
        if not self.granted:
            return None
        granted = self.granted

        async def execute(
            call: ToolCall, dispatch: Callable[[], Awaitable[ToolResult]]
        ) -> ToolResult:
            with granting(granted.get(call["id"])):
                return await dispatch()

        return execute

    async def record_result(self, result: ToolResult) -> None:
        """One tool result and its checkpoint, in one write."""
        call_id = result["toolCallId"]
        stamp = self.decided.pop(call_id, None)
        if stamp is not None:
            result = {**result, "metadata": {**result.get("metadata", {}), "approval": stamp}}
        self.pending = [c for c in self.pending if c["id"] != call_id]
        self.started.discard(call_id)
        await self.record([tool_result_message(result)], "tool")

    # --- resume -------------------------------------------------------------------------

    async def settle(self, point: ResumePoint) -> str:
        """Settle what the crash left open and say where the loop goes on:
        pending tool calls are run (or answered ``interrupted``), a recorded
        answer goes straight to the queue check (``"final"``), anything else
        to the queue check after tool results (``"tools"``), which asks the
        provider next. Nothing already recorded is requested or run again."""
        checkpoint, progress = point.checkpoint, self.progress
        self.step = checkpoint.step
        progress.messages.extend(point.run_messages)
        rounds = 1 if point.stage == "tools" else 0
        progress.tool_rounds = checkpoint.tool_rounds if checkpoint.tool_rounds else rounds
        progress.total_tool_rounds = checkpoint.total_tool_rounds or progress.tool_rounds
        if point.stage == "final":
            progress.final = point.assistant_message
            return "final"
        self._accept_recorded_output(point)
        self.pending = list(point.pending)
        waiting = {a["toolCallId"]: a for a in checkpoint.pending_approvals}
        self.approvals = [a for a in waiting.values() if a["id"] not in self.decisions]
        self.progress.pending_approvals = self.approvals
        rerun: list[ToolCall] = []
        for call in point.pending:
            request = waiting.get(call["id"])
            if request is not None:
                decision = self.decisions.get(request["id"])
                if decision is not None and await self._decide(call, request, decision):
                    rerun.append(call)
            elif call["id"] in checkpoint.started_tool_call_ids and not self.is_idempotent(call):
                await self._answer(call, interrupted_result(call))
            else:
                rerun.append(call)
        await self.run_recording(rerun)
        return "paused" if self.progress.pending_approvals else "tools"

    async def _answer(self, call: ToolCall, result: ToolResult) -> None:
        self.port.emit({"type": "tool_call", "toolCall": call})
        self.port.emit({"type": "tool_result", "result": elide_image_data(result)})
        await self.record_result(result)

    async def _decide(
        self, call: ToolCall, request: dict[str, Any], decision: ApprovalDecision
    ) -> bool:
        """Apply a human's decision; True when the call is to run."""
        event: dict[str, Any] = {
            "type": "approval_decided",
            "approvalId": request["id"],
            "toolCallId": call["id"],
            "decision": decision.kind,
        }
        if decision.reason:
            event["reason"] = self.settings.config.redactor.redact_text(decision.reason)
        self.port.emit(event)  # type: ignore[arg-type]
        self.decided[call["id"]] = {"id": request["id"], "decision": decision.kind}
        if decision.kind == "deny":
            why = f"Tool {call['name']!r} was not approved: {decision.reason or 'denied'}"
            await self._answer(call, error_result(call, why, POLICY_DENIED))
            return False
        self.granted[call["id"]] = decision
        return True

    def _accept_recorded_output(self, point: ResumePoint) -> None:
        """A structured answer the run had accepted (its ``final_result``
        call answered without error) is accepted again, not asked for again."""
        output = self.settings.output
        if output is None or output.mode != "tool" or point.assistant_message is None:
            return
        arguments = answered_output(point.assistant_message, self.progress.messages)
        if arguments is None:
            return
        value, problem = output.validate(arguments)
        if problem is None:
            self.progress.output_value = value
            self.progress.output_accepted = True
            self.progress.final = point.assistant_message

    # --- the run's end ------------------------------------------------------------------

    async def finish(self) -> None:
        if not self.ended:
            await self.checkpoint_only("end", "completed")

    def closing_id(self) -> str:
        return self.port.new_entry_id()

    async def fail(self, aborted: bool) -> None:
        """A durable run that ends in an error or an abort (in this process)
        is finished, not crashed: answer its recorded-but-unanswered tool
        calls (so the branch never holds a call without a result) and write
        its ``end`` checkpoint, so a later ``resume()`` does not pick it up.
        Runs inside the run's claim and lease. When the store itself fails
        here, the run's own error still wins; a ``checkpoint_warning`` says
        the run stays unfinished (the next run or ``resume()`` settles it)."""
        why = "the run was aborted" if aborted else "the run failed"
        entries: list[SessionEntry] = [
            {
                "id": self.closing_id(),
                "sessionId": self.port.session_id,
                "parentId": None,
                "kind": "message",
                "message": tool_result_message(closing_result(call, why)),
            }
            for call in self.pending
        ]
        self.pending = []
        self.started.clear()
        status = "aborted" if aborted else "failed"
        batch = [*entries, self.checkpoint("end", self.closing_id(), status)]
        with anyio.CancelScope(shield=True):
            try:
                await self.append(batch)
            except Exception as error:
                info = error_info(error, self.settings.config.redactor)
                self.port.emit(
                    {
                        "type": "checkpoint_warning",
                        "field": "end",
                        "message": (
                            f"the {status} run could not be closed ({info['message']}); it stays"
                            " unfinished, and the next run or session.resume() settles it"
                        ),
                    }
                )


class JournaledSteps(DurableSteps):
    """A durable run under a replaying engine's journal (``prism.durable``)."""

    __slots__ = ("journal",)

    def __init__(
        self, settings: RunSettings, port: RunPort, progress: RunProgress, journal: RunJournal
    ) -> None:
        super().__init__(settings, port, progress)
        self.journal = journal

    @property
    def engine(self) -> str | None:
        return self.journal.engine

    async def begin(self, run: Run, load: Callable[[], Awaitable[list[SessionEntry]]]) -> None:
        await self.journal.begin(run, await load())

    async def recorded(
        self,
        name: str,
        body: Callable[[], Awaitable[T]],
        to_record: Callable[[T], Any],
        from_record: Callable[[Any], T],
    ) -> T:
        async def step() -> Any:
            return to_record(await body())

        return from_record(await self.journal.step(name, step))

    async def sleep(self, seconds: float) -> None:
        await self.journal.sleep(seconds)

    async def append(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        # No append a replay already made is made again.
        return await self.journal.append(entries, self.port.append)

    @property
    def can_pause(self) -> bool:
        # The engine recovers its runs itself and session.resume() refuses
        # them, so a pause could never be answered: the run waits through
        # the engine instead (on_approval), or fails closed.
        return False

    @property
    def tool_concurrency(self) -> int:
        return 1  # the engine numbers its steps in call order: one at a time

    async def on_approval(self, call: ToolCall, result: ToolResult) -> None:
        """Under an engine that waits durably (DBOS: ``recv``), the run
        waits for the decision instead of pausing: the request is listed in
        an ``approval`` checkpoint and an ``approval_requested`` event, the
        engine records the decision, and the call is decided as a resumed
        run would decide it (run once under the decision, or denied)."""
        session_id, run_id = self.port.session_id, self.port.run_id
        request = approval_request(session_id, run_id, call, result)
        self.started.discard(call["id"])
        self.journal.forget_started(call["id"])
        self.approvals.append(request)
        # Stored before it is announced: whoever hears of it can decide it.
        await self.checkpoint_only("approval")
        self.port.emit({"type": "approval_requested", "approval": request})  # type: ignore[typeddict-item]
        raw = await self.journal.wait_for_approval(request)
        self.approvals.remove(request)
        decision = decision_from_record(raw)
        if decision is None:
            await self.record_result(result)  # the engine cannot wait: fail closed
            return
        if await self._decide(call, request, decision):
            await self.run_recording([call])

    def execute_call(self) -> ExecuteCall:
        """Each tool call one recorded step. A non-idempotent call that an
        earlier execution of the run had started is not run again: the
        step's body (which only runs when no result was recorded) answers
        it ``interrupted``, as ``session.resume()`` would."""
        journal = self.journal

        async def execute(
            call: ToolCall, dispatch: Callable[[], Awaitable[ToolResult]]
        ) -> ToolResult:
            async def body() -> ToolResult:
                if journal.started_before(call["id"]) and not self.is_idempotent(call):
                    return interrupted_result(call)
                with granting(self.granted.get(call["id"])):
                    return await dispatch()

            return await journal.step("prism.tool_call", body)

        return execute

    def closing_id(self) -> str:
        # Outside the run's deterministic sequence: if the engine replays the
        # run later (a cancelled DBOS workflow resumed, say), the replay
        # continues from the last step it finds stored, on a new branch
        # beside the closing entries.
        return f"entry_{uuid.uuid4().hex[:20]}"
