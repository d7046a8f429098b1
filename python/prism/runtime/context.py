"""What one run may read and do: the narrow context the loop works through.

The session claims a run (``RunClaim``: cancel scope and input inbox exist
from that instant), resolves its options and hands the loop, turn assembly
and auto-compaction a ``RunContext``. None of them import or reach into
``AgentSession``: everything a run needs from its session (append a batch,
take queued input, emit, new ids, the attention frontier, checkpoints) is a
method here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from prism.contracts import (
    AgentEvent,
    Message,
    ModelConfig,
    SessionEntry,
    ToolCall,
    ToolDeclaration,
)

if TYPE_CHECKING:
    from prism.compaction import CompactionOptions
    from prism.retry import RetryOptions
    from prism.runtime.branch import BranchCache
    from prism.runtime.config import AgentConfig
    from prism.runtime.structured import OutputSpec

__all__ = ["AttentionState", "RunClaim", "RunContext", "RunInbox", "RunJournal"]

T = TypeVar("T")


class RunInbox:
    """Steer and follow-up input queued for one run. Open from the claim
    until the loop's last queue check, so input is never accepted and then
    dropped."""

    __slots__ = ("_follow_ups", "_steering", "is_open")

    def __init__(self, *, is_open: bool) -> None:
        self.is_open = is_open
        self._steering: deque[Message] = deque()
        self._follow_ups: deque[Message] = deque()

    def steer(self, messages: Sequence[Message]) -> None:
        self._steering.extend(messages)

    def follow_up(self, messages: Sequence[Message]) -> None:
        self._follow_ups.extend(messages)

    def has_queued(self) -> bool:
        return bool(self._steering or self._follow_ups)

    def queued(self) -> tuple[list[Message], list[Message]]:
        """Copies of the steer and follow-up queues (for a checkpoint)."""
        return list(self._steering), list(self._follow_ups)

    def take_steering(self) -> list[Message]:
        if not self._steering:
            return []
        taken = list(self._steering)
        self._steering.clear()
        return taken

    def take_follow_up(self) -> Message | None:
        return self._follow_ups.popleft() if self._follow_ups else None

    def close(self) -> None:
        self.is_open = False
        self._steering.clear()
        self._follow_ups.clear()


class RunClaim:
    """A session's active run from the instant it is claimed.

    The cancel scope is created with the claim, not when the run enters it:
    an anyio scope cancelled before it is entered cancels its body at the
    first checkpoint, so an ``abort()`` in the first instant of a run (while
    the session is still loading) is never lost.
    """

    __slots__ = ("abort_reason", "inbox", "run_id", "scope")

    def __init__(self, run_id: str | None, *, accepts_input: bool) -> None:
        self.run_id = run_id
        self.scope = anyio.CancelScope()
        self.inbox = RunInbox(is_open=accepts_input)
        self.abort_reason: str | None = None

    def abort(self, reason: str | None) -> None:
        if not self.scope.cancel_called:
            self.abort_reason = reason
        self.scope.cancel()


class AttentionState:
    """The session's attention frontier, shared by its runs and turns."""

    __slots__ = ("frontier",)

    def __init__(self) -> None:
        self.frontier: Any = None


AppendBatch = Callable[[list[SessionEntry]], Awaitable[list[SessionEntry]]]
Emit = Callable[[AgentEvent], AgentEvent]


class RunJournal(Protocol):
    """A durable-execution engine's hold on one run (``prism.durable``).

    An engine that recovers a run by *replaying* it from the start (DBOS,
    and engines like it) needs the run to be deterministic: the same entry
    ids in the same order, each provider turn and tool call done once and
    its recorded outcome returned on replay, and appends that a replay
    already made not made again. The loop asks the journal for exactly
    those things; without a journal (``None``) it runs as usual.
    """

    @property
    def run_id(self) -> str: ...

    @property
    def engine(self) -> str:
        """The engine's name, written in the run's checkpoints: a run an
        engine owns is recovered by that engine, not ``session.resume()``."""
        ...

    def entry_id(self) -> str:
        """The next entry id: a pure function of the run and the position."""
        ...

    async def begin(self, run: RunContext, entries: Sequence[SessionEntry]) -> None:
        """Called once the session is loaded (``entries``: all of them), before
        the run's first append: a replay puts the run back where it began."""
        ...

    async def append(self, entries: list[SessionEntry], write: AppendBatch) -> list[SessionEntry]:
        """Append through ``write`` what the store does not hold yet; return
        the stored copies of all of ``entries``."""
        ...

    async def step(self, name: str, body: Callable[[], Awaitable[T]]) -> T:
        """Run ``body`` once and record its (JSON-able) result; on replay
        return the recorded result without running it."""
        ...

    async def sleep(self, seconds: float) -> None:
        """A retry's wait, which a replay does not wait again."""
        ...

    def started_before(self, call_id: str) -> bool:
        """Whether an earlier execution of this run recorded ``call_id`` as
        started (its ``tool_start`` checkpoint was already stored)."""
        ...


@dataclass(slots=True, kw_only=True)
class RunContext:
    """One run (or one manual compaction, ``run_id=None``): its resolved
    options, its progress, and the capabilities its session grants it."""

    session_id: str
    run_id: str | None
    config: AgentConfig
    branch: BranchCache
    # Resolved options (once, when the run is claimed).
    model: ModelConfig | None = None
    system: tuple[str, ...] = ()
    retry: RetryOptions | None = None
    compaction: CompactionOptions | None = None
    max_tool_rounds: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tool_declarations: list[ToolDeclaration] = field(default_factory=list)
    attention: Any = None
    output: OutputSpec | None = None
    # Progress of the loop.
    turn: int = 0
    started: bool = False
    messages: list[Message] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    tool_rounds: int = 0
    total_tool_rounds: int = 0
    final: Message | None = None
    stop_reason: str | None = None
    output_value: Any = None
    output_accepted: bool = False
    # Durable runs (docs/durable.md): checkpoints at each step boundary.
    durable: bool = False
    persist_state: bool = False
    step: int = 0
    # Tool calls recorded in the store without a result yet, and which of
    # them have started: what a checkpoint says a resume must settle.
    pending_calls: list[ToolCall] = field(default_factory=list)
    started_calls: set[str] = field(default_factory=set)
    ended: bool = False  # the newest checkpoint written is the run's "end"
    # A replaying engine's hold on the run (prism.durable), else None.
    journal: RunJournal | None = None
    # Capabilities.
    emit_event: Emit
    append_batch: AppendBatch
    new_id: Callable[[], str]
    inbox: RunInbox
    attention_state: AttentionState

    def emit(self, event: AgentEvent) -> AgentEvent:
        """Emit a run event (``sessionId``/``runId`` are added)."""
        return self.emit_event(event)

    def new_entry_id(self) -> str:
        return self.new_id()

    async def append(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append ``entries`` as one atomic chain under the leaf; returns the
        stored (redacted when secrets are set) copies."""
        return await self.append_batch(entries)

    def take_steering(self) -> list[Message]:
        return self.inbox.take_steering()

    def take_follow_up(self) -> Message | None:
        return self.inbox.take_follow_up()

    def close_inbox(self) -> None:
        self.inbox.close()

    @property
    def current_model(self) -> ModelConfig:
        """The run's model: its override, else the branch's latest
        ``model_change``, else the agent's model."""
        if self.model is not None:
            return self.model
        return self.branch.model or self.config.model

    @property
    def frontier(self) -> Any:
        return self.attention_state.frontier

    @frontier.setter
    def frontier(self, value: Any) -> None:
        self.attention_state.frontier = value

    def checkpoint_entries(
        self, phase: str, status: str | None = None, start_entry_id: str | None = None
    ) -> list[SessionEntry]:
        """The checkpoint to fold into the batch this step appends anyway:
        one ``prism.checkpoint`` custom entry for a durable run, else
        nothing. Put it after the step's entries (format: docs/durable.md)."""
        if not self.durable:
            return []
        self.step += 1
        self.ended = phase == "end"
        # Empty lists are left out: a checkpoint per step stays a few dozen bytes.
        data: dict[str, Any] = {
            "version": 1,
            "runId": self.run_id,
            "step": self.step,
            "phase": phase,
        }
        if self.pending_calls:
            data["pendingToolCalls"] = [dict(call) for call in self.pending_calls]
        if self.started_calls:
            data["startedToolCallIds"] = sorted(self.started_calls)
        if self.inbox.has_queued():
            steering, follow_ups = self.inbox.queued()
            if steering:
                data["steering"] = steering
            if follow_ups:
                data["followUps"] = follow_ups
        if status is not None:
            data["status"] = status
        if start_entry_id is not None:
            data["startEntryId"] = start_entry_id
        if self.journal is not None:
            data["engine"] = self.journal.engine
        if self.persist_state:
            state: dict[str, Any] = {}
            frontier = self.attention_state.frontier
            if frontier is not None:
                state["attentionSticky"] = frontier.to_json()
            if self.model is not None:
                state["model"] = dict(self.model)
            data["sessionState"] = state
        entry: dict[str, Any] = {
            "id": self.new_id(),
            "sessionId": self.session_id,
            "parentId": None,
            "kind": "custom",
            "customType": "prism.checkpoint",
            "data": data,
        }
        return [entry]  # type: ignore[list-item]

    async def checkpoint(self, phase: str, status: str | None = None) -> None:
        """A step boundary with nothing else to append (``"tool_start"``,
        ``"end"``): a checkpoint-only batch for a durable run, else a no-op.
        Boundaries that append entries fold theirs in with
        :meth:`checkpoint_entries` instead (one write per step)."""
        if self.durable:
            await self.append_batch(self.checkpoint_entries(phase, status))
