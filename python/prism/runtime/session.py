"""``AgentSession``: one conversation on a store, its branch, and its runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio
import sniffio

from prism.branching import branch_entries, copy_branch
from prism.contracts import Message, ModelConfig, SessionEntry
from prism.errors import ConfigError, NoActiveRunError, SessionBusyError, UnknownNameError
from prism.middleware import report_middleware_errors
from prism.runtime.branch import BranchCache
from prism.runtime.config import registered_model, validate_model
from prism.runtime.context import AttentionState, RunInbox, RunJournal
from prism.runtime.events import AgentEventListener, EventHub
from prism.runtime.input import normalize_input
from prism.runtime.options import RunOptions
from prism.runtime.result import RunResult
from prism.runtime.runner import BUSY_MESSAGE, Begun, RunDriver
from prism.runtime.stream import RunStream
from prism.runtime.writer import SessionWriter
from prism.stores.base import SessionStore

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from prism.runtime.agent import Agent

__all__ = ["BUSY_MESSAGE", "AgentSession"]

_NO_REPORTING: AbstractContextManager[None] = nullcontext()


class AgentSession:
    """A conversation: entries in a store, a current leaf, at most one active run.

    Create it with :meth:`Agent.create_session` (or :meth:`Agent.open_session`
    to load an existing one). Reads (``entries``/``messages``/``state``) load
    the session from its store on first use; later turns work from a cached
    branch view that appends extend in place.
    """

    def __init__(self, agent: Agent, session_id: str, store: SessionStore) -> None:
        self.agent = agent
        self._id = session_id
        self._store = store
        config = agent.config
        self._hub = EventHub(session_id, config.redactor)
        self.branch = BranchCache()
        # Owned by the attention wiring: survives across runs of this session.
        self._attention = AttentionState()
        self._writer = SessionWriter(
            store, session_id, config.redactor, self.branch, self._attention
        )
        self._runs = RunDriver(
            config,
            session_id,
            store,
            self._writer,
            self._hub,
            self._attention,
            (self.load, self._reporting, self.new_entry_id),
        )

    # --- identity and cheap state --------------------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def store(self) -> SessionStore:
        return self._store

    @property
    def leaf_id(self) -> str | None:
        return self.branch.leaf_id

    @property
    def is_running(self) -> bool:
        return self._runs.claim is not None

    @property
    def attention_sticky(self) -> Any:
        """The session's attention frontier (None until a compiler-on turn)."""
        return self._attention.frontier

    @attention_sticky.setter
    def attention_sticky(self, value: Any) -> None:
        self._attention.frontier = value

    @property
    def current_model(self) -> ModelConfig:
        """The latest ``model_change`` on the branch, else the agent's model."""
        return self.branch.model or self.agent.config.model

    @property
    def _active_run_id(self) -> str | None:
        claim = self._runs.claim
        return claim.run_id if claim is not None else None

    def new_entry_id(self) -> str:
        return f"entry_{uuid.uuid4().hex[:20]}"

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        """Call ``listener(event)`` synchronously for every event, in order;
        returns a function that unsubscribes it."""
        return self._hub.subscribe(listener)

    # --- loading and appending --------------------------------------------------------

    async def load(self) -> AgentSession:
        """Read the session's entries once; the leaf becomes the last appended entry."""
        if not self._writer.loaded:
            entries = await self._store.list(self._id)
            self.branch.reset(entries, None)
            self._writer.seen(entries)
            self._writer.loaded = True
            middleware = self.agent.config.middleware
            if middleware is not None and middleware.has("session_start"):
                with self._reporting(None):
                    await middleware.run("session_start", {"sessionId": self._id})
        return self

    async def close(self) -> None:
        """Run ``session_shutdown`` middleware (once, if the session was loaded).
        Refused while a run is active; the session can be loaded again later."""
        if self._runs.claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        if not self._writer.loaded:
            return
        self._writer.loaded = False
        middleware = self.agent.config.middleware
        if middleware is not None and middleware.has("session_shutdown"):
            with self._reporting(None):
                await middleware.run("session_shutdown", {"sessionId": self._id})

    def _reporting(self, run_id: str | None) -> AbstractContextManager[None]:
        """A middleware failing (``error_policy="event"``) while this session
        runs a hook becomes a redacted ``extension_error`` event. Nothing to
        set up for an agent without middleware (the common per-turn path)."""
        if self.agent.config.middleware is None:
            return _NO_REPORTING
        hub = self._hub

        def report(hook: str, error: BaseException) -> None:
            hub.report_extension_error("middleware", error, run_id, hook=hook)

        return report_middleware_errors(report)

    def _begin(self, input: Any, options: Any, journal: RunJournal | None = None) -> Begun:
        """Claim a run (``prism.durable.run_journaled`` passes a journal)."""
        return self._runs.begin(input, options, journal)

    async def run(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunResult:
        """Run the agent loop on ``input`` and return the result.

        Raises ``SessionBusyError`` at once if a run is active, ``ConfigError``
        for bad input/options (nothing appended), and on failure the run's
        error (``RunAbortedError``, ``ProviderError``, ``MaxToolRoundsError``,
        ...) after emitting the ``error`` event. ``retry=False`` /
        ``compaction=False`` switch those off for this run. A durable run
        left unfinished on the branch (its process died) is closed first
        (docs/durable.md).
        """
        _, _, execute = self._runs.begin(input, options)
        return await execute()

    async def resume(
        self, decisions: Mapping[str, Any] | None = None, **options: Unpack[RunOptions]
    ) -> RunResult | None:
        """Continue the newest unfinished durable run on the branch from its
        last checkpoint (after a crash). Returns its result, or None when
        there is nothing to resume (no durable run, or the newest finished).
        Nothing recorded is redone: provider turns on the branch are not
        requested again, tool calls with a result are not run again, and a
        started call without a result is re-run only if its tool is
        ``idempotent`` (else answered with an ``interrupted`` error); when
        the record of that is unreadable, ``CheckpointDamagedError``. Run
        options apply to the rest of the run; the run stays durable. A run
        a replaying engine owns (DBOS) is refused with ``ConfigError``: the
        engine recovers it. See docs/durable.md.

        ``decisions`` answers the approvals a paused run waits on, by
        approval id (``RunResult.pending_approvals``): approved and edited
        calls run once, denied ones are answered with the reason; an id
        that is not pending raises ``ApprovalDecisionError`` and nothing
        runs (docs/approvals.md)."""
        return await self._runs.resume(options, decisions)

    def run_sync(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunResult:
        """``run`` for scripts and notebooks without an event loop: starts one
        (asyncio), runs, and returns the result. Refused inside a running
        event loop (``await session.run(...)`` there)."""
        _refuse_inside_event_loop("session.run_sync", "await session.run(...)")
        result: RunResult = anyio.run(lambda: self.run(input, **options))
        return result

    def resume_sync(
        self, decisions: Mapping[str, Any] | None = None, **options: Unpack[RunOptions]
    ) -> RunResult | None:
        """:meth:`resume` for scripts without an event loop."""
        _refuse_inside_event_loop("session.resume_sync", "await session.resume(...)")
        result: RunResult | None = anyio.run(lambda: self.resume(decisions, **options))
        return result

    def stream(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunStream:
        """Run like :meth:`run` and yield every event of the run as it happens.

        ``async for event in session.stream(...)`` or ``async with
        session.stream(...) as events:`` (then ``events.result``). Leaving
        the loop or the block early, or dropping the iterator, aborts the run
        and frees the session; see :class:`~prism.runtime.stream.RunStream`.
        """
        runs = self._runs
        return RunStream(lambda: runs.begin(input, options), self._hub.subscribe, runs.release)

    def abort(self, reason: str | None = None) -> bool:
        """Cancel the active run (its error is ``RunAbortedError``, code
        ``"aborted"``). Returns False when there was no run to abort. Works
        from the instant the run is claimed, before it has loaded."""
        claim = self._runs.claim
        if claim is None or claim.run_id is None:
            return False
        claim.abort(reason)
        return True

    # --- steering -------------------------------------------------------------------------

    def steer(self, message: str | Message | Sequence[Message]) -> None:
        """Queue input for the active run, injected before its next provider
        turn (after the tool results of the current turn; with the input when
        the run has not reached its first turn yet)."""
        self._inbox("steer").steer(normalize_input(message))

    def follow_up(self, message: str | Message | Sequence[Message]) -> None:
        """Queue input to run as a new user turn, within the active run, once
        it would otherwise finish."""
        self._inbox("follow_up").follow_up(normalize_input(message))

    def _inbox(self, what: str) -> RunInbox:
        claim = self._runs.claim
        if claim is None or not claim.inbox.is_open:
            raise NoActiveRunError(f"Cannot {what}: the session has no active run")
        return claim.inbox

    # --- model, reads ---------------------------------------------------------------------

    async def set_model(
        self, model: ModelConfig | str, *, provider: str | None = None
    ) -> SessionEntry:
        """Append a ``model_change`` entry under the leaf; later provider turns
        (including the active run's next turn) use it.

        ``model`` is a ``ModelConfig`` or a model id; ``provider`` switches the
        provider too (a model id on another provider resolves through the
        agent's ``providers`` registry, with its registered config when it has
        one). A provider the agent cannot reach raises before anything is
        stored."""
        config = self.agent.config
        await self.load()
        if isinstance(model, str):
            name = provider or self.current_model["provider"]
            model = registered_model(config.providers, name, model)
        elif provider is not None:
            model = {**model, "provider": provider}
        checked = validate_model(model)
        config.check_provider(checked, "set_model")
        stored = await self._append_entry("model_change", model=checked)
        self._hub.emit(
            {"type": "model_changed", "model": stored["model"], "entryId": stored["id"]},  # type: ignore[typeddict-item]
            self._active_run_id,
        )
        return stored

    async def add_label(self, label: str, target_id: str | None = None) -> SessionEntry:
        """Append a ``label`` entry under the leaf naming ``target_id`` (default:
        the current leaf); ``prism.branching.labels`` reads them back."""
        if not isinstance(label, str) or not label:
            raise ConfigError("label must be a non-empty string")
        await self.load()
        async with self._writer.claimed():
            target = target_id if target_id is not None else self.branch.leaf_id
            if target is None:
                return await self._append_entry("label", label=label)
            if await self._store.get(target) is None:
                raise UnknownNameError(f"unknown session entry id {target!r}")
            return await self._append_entry("label", label=label, targetId=target)

    async def append_custom(self, custom_type: str, data: Any = None) -> SessionEntry:
        """Append one ``custom`` entry (host data such as memory records) under
        the leaf. Custom entries never reach a provider and are never
        summarized, so this is allowed during a run too. ``data`` must be
        JSON; the agent's secrets are redacted from it like from any entry."""
        if not isinstance(custom_type, str) or not custom_type:
            raise ConfigError("custom entry type must be a non-empty string")
        await self.load()
        if data is None:
            return await self._append_entry("custom", customType=custom_type)
        return await self._append_entry("custom", customType=custom_type, data=data)

    async def _append_entry(self, kind: str, **fields: Any) -> SessionEntry:
        """One entry of ``kind`` under the leaf, outside the loop: under the
        same lease as runs take, after whatever other handles or processes
        appended, so it never forks the conversation from a stale leaf."""
        entry: dict[str, Any] = {
            "id": self.new_entry_id(),
            "sessionId": self._id,
            "parentId": None,
            "kind": kind,
            **fields,
        }
        async with self._writer.claimed():
            (stored,) = await self._writer.append_chain([entry])  # type: ignore[list-item]
        return stored

    async def entries(self) -> list[SessionEntry]:
        """Every entry of this session (all branches), in append order."""
        await self.load()
        return list(await self._store.list(self._id))

    async def branch_entries(self) -> list[SessionEntry]:
        """The raw current branch, root first."""
        await self.load()
        return list(self.branch.entries)

    async def messages(self) -> list[Message]:
        """Provider-facing messages of the current branch (after the latest compaction)."""
        await self.load()
        return list(self.branch.messages)

    async def state(self) -> dict[str, Any]:
        """A JSON-able snapshot (RPC ``state``)."""
        await self.load()
        return {
            "sessionId": self._id,
            "leafId": self.branch.leaf_id,
            "model": self.current_model,
            "isRunning": self._runs.claim is not None,
            "runId": self._active_run_id,
            "entryCount": len(self.branch.entries),
            "messageCount": len(self.branch.messages),
        }

    # --- compaction ---------------------------------------------------------------------

    async def compact(self, **options: Any) -> SessionEntry:
        """Compact the current branch now; refused while a run is active.

        Options are ``CompactionOptions`` fields (snake_case), layered over the
        agent's compaction config. Returns the appended compaction entry.
        """
        entry = await self._runs.compact(options, auto=False)
        assert entry is not None
        return entry

    async def auto_compact(self, **options: Any) -> SessionEntry | None:
        """Ask the compaction trigger now, exactly as a run does once before
        its first provider turn, and compact when it fires. Options are
        ``CompactionOptions`` fields layered over the agent's (for example
        ``trigger=...``). Returns the compaction entry, or None when no
        trigger is configured or it did not fire. Refused while a run is
        active."""
        return await self._runs.compact(options, auto=True)

    # --- branches and sessions -------------------------------------------------------------

    async def navigate(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id`` in this session; the next run branches from there."""
        if self._runs.claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        await self.load()
        entries = await self._store.list(self._id)
        self.branch.reset(entries, entry_id)
        self._writer.seen(entries)
        # The sticky frontier belongs to a branch: the next compiler-on turn
        # restores the one checkpointed on the branch moved to (or starts
        # empty), instead of carrying the old branch's stubs across.
        self.attention_sticky = None

    async def fork(self, entry_id: str | None = None, *, id: str | None = None) -> AgentSession:
        """A new session (same store) holding a copy of the branch from the root
        to ``entry_id`` (default: the current leaf), with fresh entry ids.
        This session is left untouched."""
        await self.load()
        entries = await self._store.list(self._id)
        target = entry_id if entry_id is not None else self.branch.leaf_id
        path = branch_entries(entries, target) if target is not None else []
        new = self.agent.create_session(id=id, store=self._store)
        await new.load()
        if new.branch.entries:
            raise ConfigError(f"cannot fork into session {new.id!r}: it already has entries")
        copies = copy_branch(path, new.id, new.new_entry_id)
        if copies:
            await new._store.append_many(copies)
        new.branch.reset(copies, copies[-1]["id"] if copies else None)
        new._writer.seen(copies)
        return new

    async def clone(self, *, id: str | None = None) -> AgentSession:
        """``fork`` at the current leaf: the same branch under a new session id."""
        return await self.fork(None, id=id)


def _refuse_inside_event_loop(what: str, instead: str) -> None:
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return
    raise ConfigError(f"{what} cannot run inside a running {library} event loop; use {instead}")
