"""What a running step can reach: ``StepContext``.

``ctx.run_agent(session, input)`` is how a step runs an agent so that a
crash never repeats its work: before the run, the workflow records the
session and its leaf; the run is durable (``durable=True``). A resumed
step calls ``run_agent`` again and gets, for that call: the stored result
when the run finished, the continued run (``session.resume()``) when it was
cut off, or a fresh run when it never stored its input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from prism.contracts import Message, SessionEntry, Usage
from prism.runtime import AgentSession, RunResult
from prism.workflows.errors import WorkflowError
from prism.workflows.log import WorkflowLog

__all__ = ["AgentRunPaused", "StepContext"]

CHECKPOINT = "prism.checkpoint"  # the durable runs' checkpoint entries (docs/durable.md)


class AgentRunPaused(Exception):
    """Internal: a step's agent run paused for approval; the workflow pauses too."""

    def __init__(self, session_id: str, approvals: list[dict[str, Any]]) -> None:
        super().__init__(f"agent run in session {session_id!r} paused for approval")
        self.session_id = session_id
        self.approvals = approvals


class StepContext:
    """The context a step function gets when it declares a parameter
    annotated ``StepContext``."""

    __slots__ = ("_calls", "_decisions", "_log", "_stored_calls", "seq", "step", "workflow_id")

    def __init__(
        self,
        log: WorkflowLog,
        step: str,
        seq: int,
        stored_calls: Mapping[int, dict[str, Any]],
        decisions: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self._log = log
        self.workflow_id = log.workflow_id
        self.step = step
        self.seq = seq  # 0, 1, ...: the how-manieth step of this workflow run
        self._stored_calls = stored_calls
        self._decisions = decisions
        self._calls = 0

    async def run_agent(self, session: AgentSession, input: Any, **options: Any) -> RunResult:
        """Run ``session`` on ``input`` as a durable run, exactly once across
        crashes (see the module docstring). A run that pauses for approval
        pauses the workflow; ``resume_workflow(decisions=...)`` answers it."""
        call = self._calls
        self._calls += 1
        options["durable"] = True
        stored = self._stored_calls.get(call)
        if stored is None or stored.get("sessionId") != session.id:
            entries = await session.branch_entries()
            await self._log.write(
                {
                    "t": "agent",
                    "seq": self.seq,
                    "step": self.step,
                    "call": call,
                    "sessionId": session.id,
                    "leafId": entries[-1]["id"] if entries else None,
                }
            )
            result = await session.run(input, **options)
        else:
            result = await self._continue(session, input, stored, options)
        if result.paused:
            raise AgentRunPaused(session.id, [dict(a) for a in result.pending_approvals])
        return result

    async def compact(self, session: AgentSession, **options: Any) -> SessionEntry:
        """``session.compact(**options)``: the task-boundary compaction. Run
        again after a crash it adds one more summary; history is kept."""
        return await session.compact(**options)

    async def _continue(
        self, session: AgentSession, input: Any, stored: dict[str, Any], options: dict[str, Any]
    ) -> RunResult:
        entries = cast(list[dict[str, Any]], await session.branch_entries())
        leaf = stored.get("leafId")
        ids = [e["id"] for e in entries]
        if leaf is not None and leaf not in ids:
            raise WorkflowError(
                f"step {self.step!r}: session {session.id!r} no longer has the entry its agent"
                f" run started from ({leaf!r}); it was moved to another branch",
                code="workflow_agent_branch",
            )
        after = entries[ids.index(leaf) + 1 :] if leaf is not None else entries
        checkpoints = [
            e["data"]
            for e in after
            if e.get("kind") == "custom"
            and e.get("customType") == CHECKPOINT
            and isinstance(e.get("data"), dict)
        ]
        if not checkpoints:  # cut off before the run stored its input
            return await session.run(input, **options)
        run_id = checkpoints[0].get("runId")
        newest = [c for c in checkpoints if c.get("runId") == run_id][-1]
        if newest.get("phase") != "end":
            mine = self._decisions.get(session.id)
            result = await session.resume(decisions=mine or None, **options)
            if result is None:  # pragma: no cover - the checkpoint said unfinished
                raise WorkflowError(f"step {self.step!r}: run {run_id!r} could not be resumed")
            return result
        if newest.get("status") != "completed":
            raise WorkflowError(
                f"step {self.step!r}: agent run {run_id!r} ended {newest.get('status')!r}",
                code="workflow_agent_failed",
            )
        return _stored_result(session.id, str(run_id), after, newest)


def _stored_result(
    session_id: str, run_id: str, after: list[dict[str, Any]], end: dict[str, Any]
) -> RunResult:
    """A finished run's result, read back from the branch (a crash came
    between the run's end and the step's ``done`` record)."""
    messages: list[Message] = [e["message"] for e in after if e.get("kind") == "message"]
    final = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    text = ""
    usage: Usage = {}
    stop: str | None = None
    if final is not None:
        content = final.get("content")
        if isinstance(content, list):
            text = "".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b["type"] == "text"
            )
        elif isinstance(content, str):
            text = content
        raw = cast(dict[str, Any], final)
        stop = raw.get("stopReason")
        usage = cast(Usage, dict(raw.get("usage") or {}))
    return RunResult(
        session_id=session_id,
        run_id=run_id,
        message=final,
        text=text,
        messages=messages,
        usage=usage,
        stop_reason=stop,
        tool_rounds=int(end.get("totalToolRounds") or 0),
        leaf_id=after[-1]["id"] if after else None,
    )
