"""What one run is: frozen settings, mutable progress, and a narrow port.

The session claims a run (``RunClaim``: cancel scope and input inbox exist
from that instant), resolves its options into ``RunSettings`` and hands the
loop a ``Run``: those settings, a fresh ``RunProgress`` (what the loop has
done so far), the ``RunPort`` to its session (append a batch, emit, new
ids, queued input, the attention frontier) and the ``Steps`` runner that
executes the loop's steps (plain, durable or under a replaying engine; see
``prism.runtime.steps``). None of them import or reach into
``AgentSession``.
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
    ToolDeclaration,
)

if TYPE_CHECKING:
    from prism.compaction import CompactionOptions
    from prism.retry import RetryOptions
    from prism.runtime.branch import BranchCache
    from prism.runtime.config import AgentConfig
    from prism.runtime.steps import Steps
    from prism.runtime.structured import OutputSpec

__all__ = [
    "AttentionState",
    "Run",
    "RunClaim",
    "RunInbox",
    "RunJournal",
    "RunPort",
    "RunProgress",
    "RunSettings",
]

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
    """The session's attention frontier, shared by its runs and turns, and
    what its token-calibration record last said (prism.runtime.calibrate)."""

    __slots__ = ("calibration_marks", "calibration_seen", "frontier")

    def __init__(self) -> None:
        self.frontier: Any = None
        # The id of the newest calibration record this session restored or
        # wrote, and per model the ratios, turn count and last turn's error
        # that record holds.
        self.calibration_seen: str | None = None
        self.calibration_marks: dict[str, tuple[dict[str, float], int, float | None]] = {}


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

    async def begin(self, run: Run, entries: Sequence[SessionEntry]) -> None:
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

    async def wait_for_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Wait durably for a human's decision on ``request`` (a pending
        approval): ``{"kind": "approve"|"deny"|"edit", "reason"?,
        "arguments"?}``, recorded so a replay gets the same answer. None:
        this engine cannot wait, and the call fails closed."""
        ...

    def forget_started(self, call_id: str) -> None:
        """``call_id`` asked for approval before any side effect: the
        ``tool_start`` a replay found for it no longer means it started."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """What was resolved for this run when it was claimed; never changes
    while it runs (a resume resolves its own, from the checkpoint)."""

    config: AgentConfig
    model: ModelConfig | None = None  # the run's override, else the branch's
    system: tuple[str, ...] = ()
    retry: RetryOptions | None = None
    compaction: CompactionOptions | None = None
    max_tool_rounds: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tool_declarations: list[ToolDeclaration] = field(default_factory=list)
    attention: Any = None
    output: OutputSpec | None = None
    durable: bool = False
    persist_state: bool = False

    def model_on(self, branch: BranchCache) -> ModelConfig:
        """The run's model: its override, else the branch's latest
        ``model_change``, else the agent's model."""
        if self.model is not None:
            return self.model
        return branch.model or self.config.model


@dataclass(slots=True)
class RunProgress:
    """What the loop has done so far. The durable layer writes the counters
    and the accepted output into its checkpoints, so a resumed run goes on
    with them (docs/durable.md)."""

    turn: int = 0
    started: bool = False  # run_started was emitted
    messages: list[Message] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    tool_rounds: int = 0  # since the last follow-up: what max_tool_rounds bounds
    total_tool_rounds: int = 0  # the whole run: RunResult.tool_rounds
    final: Message | None = None
    stop_reason: str | None = None
    output_value: Any = None
    output_accepted: bool = False
    # Approval requests the run paused on (prism.runtime.approvals); the run
    # ends paused, without its "end" checkpoint, while any is listed.
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)
    # A token-calibration record learned this turn, written with the turn's
    # batch (prism.runtime.calibrate).
    calibration: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class RunPort:
    """The run's narrow hold on its session: append, emit, ids, queued
    input and the attention frontier. Nothing else of the session is
    reachable from the loop."""

    session_id: str
    claim: RunClaim
    branch: BranchCache
    attention_state: AttentionState
    emit_event: Emit
    append_batch: AppendBatch
    new_id: Callable[[], str]
    store: Any = None
    """The session's store, handed to tools (``ToolContext.store``)."""

    @property
    def run_id(self) -> str | None:
        # Read at use: a resumed run takes over its checkpoint's id.
        return self.claim.run_id

    @property
    def inbox(self) -> RunInbox:
        return self.claim.inbox

    def emit(self, event: AgentEvent) -> AgentEvent:
        """Emit a run event (``sessionId``/``runId`` are added)."""
        return self.emit_event(event)

    def new_entry_id(self) -> str:
        return self.new_id()

    async def append(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append ``entries`` as one atomic chain under the leaf; returns the
        stored (redacted when secrets are set) copies."""
        return await self.append_batch(entries)

    @property
    def frontier(self) -> Any:
        return self.attention_state.frontier

    @frontier.setter
    def frontier(self, value: Any) -> None:
        self.attention_state.frontier = value


@dataclass(slots=True)
class Run:
    """One run (or one manual compaction, ``run_id=None``): the three parts
    and the step runner that executes its steps."""

    settings: RunSettings
    progress: RunProgress
    port: RunPort
    steps: Steps

    @property
    def current_model(self) -> ModelConfig:
        return self.settings.model_on(self.port.branch)
