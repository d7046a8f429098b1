"""The parts of one delegation: its ids, how an attempt ended, the token
meter, and the small conversions the supervisor needs (prism.subagents)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prism.errors import ConfigError
from prism.runtime import Agent, AgentSession, RunResult
from prism.security.approval import ApprovalDecision
from prism.subagents.records import ChildRecord
from prism.subagents.spec import ChildContext, ChildSpec, DelegationOutcome, TerminalOutcome

__all__ = [
    "Delegation",
    "Ended",
    "TokenMeter",
    "describe",
    "ended_from_checkpoint",
    "link_data",
    "make_agent",
    "usage_of",
]


@dataclass(slots=True)
class Delegation:
    """One call of the delegation tool: its ids and where to report."""

    delegation_id: str
    child: str
    task: str
    tool_call_id: str
    parent_session_id: str
    parent_run_id: str | None
    store: Any
    emit: Callable[[Any], Any] | None
    granted: ApprovalDecision | None

    def context(self, resumed: bool) -> ChildContext:
        return ChildContext(
            delegation_id=self.delegation_id,
            child=self.child,
            task=self.task,
            session_id=self.delegation_id,
            parent_session_id=self.parent_session_id,
            parent_run_id=self.parent_run_id,
            tool_call_id=self.tool_call_id,
            store=self.store,
            resumed=resumed,
        )

    def outcome(self, ended: Ended, context: ChildContext | None) -> DelegationOutcome:
        """What the ``after`` hook sees of this delegation's end. A rejection
        (``ended.outcome == "rejected"``) has no child session."""
        return DelegationOutcome(
            delegation_id=self.delegation_id,
            child=self.child,
            outcome=ended.outcome,  # type: ignore[arg-type]
            tool_call_id=self.tool_call_id,
            parent_session_id=self.parent_session_id,
            session_id=None if ended.outcome == "rejected" else self.delegation_id,
            text=ended.text,
            reason=ended.reason,
            usage=ended.usage,
            tool_rounds=ended.tool_rounds,
            context=context,
        )


@dataclass(slots=True)
class Ended:
    """How one attempt of a child ended (``suspended``: paused for approval)."""

    outcome: str
    text: str = ""
    reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    tool_rounds: int = 0
    result: RunResult | None = None


class TokenMeter:
    """Sums a child's provider usage from its events; aborts it once over."""

    def __init__(self, session: AgentSession, limit: int | None) -> None:
        self.session = session
        self.limit = limit
        self.used = 0
        self.over: str | None = None
        self.detach = session.subscribe(self) if limit is not None else (lambda: None)

    def __call__(self, event: Any) -> None:
        if event.get("type") != "message_finished" or self.limit is None:
            return
        usage = event.get("usage") or {}
        self.used += int(usage.get("inputTokens", 0)) + int(usage.get("outputTokens", 0))
        if self.used > self.limit and self.over is None:
            self.over = f"token budget exceeded ({self.used} > max_tokens={self.limit})"
            self.session.abort(self.over)


async def make_agent(spec: ChildSpec, context: ChildContext) -> Agent:
    made = spec.create_agent(context)
    if inspect.isawaitable(made):
        made = await made
    if not isinstance(made, Agent):
        raise ConfigError(f"create_agent returned {type(made).__name__}, not an Agent")
    return made


def link_data(delegation: Delegation) -> dict[str, Any]:
    return {
        "version": 1,
        "delegationId": delegation.delegation_id,
        "child": delegation.child,
        "parentSessionId": delegation.parent_session_id,
        "parentRunId": delegation.parent_run_id,
        "toolCallId": delegation.tool_call_id,
    }


def ended_from_checkpoint(record: ChildRecord) -> Ended:
    ended = record.ended or {}
    status = ended.get("status")
    rounds = ended.get("totalToolRounds")
    tool_rounds = rounds if isinstance(rounds, int) else 0
    if status == "completed":
        return Ended("success", record.last_text, tool_rounds=tool_rounds)
    kind: TerminalOutcome = "abort" if status == "aborted" else "failure"
    return Ended(kind, reason=f"its run ended {status or 'without a status'}")


def usage_of(tokens: int) -> dict[str, Any]:
    return {"totalTokens": tokens} if tokens else {}


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
