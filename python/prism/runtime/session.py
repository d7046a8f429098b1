"""``AgentSession``: one conversation on a store, its branch, and its runs."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio
import sniffio

from prism._clock import utc_timestamp
from prism.branching import branch_entries, copy_branch
from prism.contracts import ErrorInfo, Message, ModelConfig, RunFinishedEvent, SessionEntry
from prism.errors import (
    ConfigError,
    NoActiveRunError,
    PrismError,
    ProviderError,
    RunAbortedError,
    SessionBusyError,
    UnknownNameError,
    error_info,
)
from prism.middleware import report_middleware_errors
from prism.runtime.autocompact import compact_branch, maybe_auto_compact, merged_options
from prism.runtime.branch import BranchCache
from prism.runtime.config import registered_model, validate_model
from prism.runtime.context import AppendBatch, AttentionState, RunClaim, RunContext, RunJournal
from prism.runtime.events import AgentEventListener, EventHub
from prism.runtime.input import normalize_input
from prism.runtime.loop import execute_run
from prism.runtime.options import RunOptions, check_run_option_names
from prism.runtime.resolve import resolve_run_settings, run_attention
from prism.runtime.result import RunResult
from prism.runtime.resume import close_failed_run, take_over
from prism.runtime.stream import RunStream
from prism.security.redaction import redact_keeping_ids
from prism.stores.base import SessionLeaseHolder, SessionStore

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from prism.runtime.agent import Agent

BUSY_MESSAGE = "Agent session already has an active run"
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
        self._hub = EventHub(session_id, agent.config.redactor)
        self.branch = BranchCache()
        self._loaded = False
        self._lock: anyio.Lock | None = None
        # The active run (or manual compaction) from the instant it is claimed.
        self._claim: RunClaim | None = None
        self._lease = SessionLeaseHolder(store, session_id)  # the store's run lease
        # Owned by the attention wiring: survives across runs of this session.
        self._attention = AttentionState()

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
        return self._claim is not None

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
        return self._claim.run_id if self._claim is not None else None

    def new_entry_id(self) -> str:
        return f"entry_{uuid.uuid4().hex[:20]}"

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        """Call ``listener(event)`` synchronously for every event, in order;
        returns a function that unsubscribes it."""
        return self._hub.subscribe(listener)

    # --- loading and appending --------------------------------------------------------

    async def load(self) -> AgentSession:
        """Read the session's entries once; the leaf becomes the last appended entry."""
        if not self._loaded:
            entries = await self._store.list(self._id)
            self.branch.reset(entries, None)
            self._lease.seen(entries)
            self._loaded = True
            middleware = self.agent.config.middleware
            if middleware is not None and middleware.has("session_start"):
                with self._reporting(None):
                    await middleware.run("session_start", {"sessionId": self._id})
        return self

    async def close(self) -> None:
        """Run ``session_shutdown`` middleware (once, if the session was loaded).
        Refused while a run is active; the session can be loaded again later."""
        if self._claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        if not self._loaded:
            return
        self._loaded = False
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

    def _append_lock(self) -> anyio.Lock:
        if self._lock is None:
            # Uncontended (the common case: one run appends at a time) the
            # lock is taken without a trip through the event loop; the run
            # still reaches a cancellation point at its next provider or
            # tool await.
            self._lock = anyio.Lock(fast_acquire=True)
        return self._lock

    async def _append_chain(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append ``entries`` as a chain under the current leaf in one atomic batch."""
        redactor = self.agent.config.redactor
        async with self._append_lock():
            parent = self.branch.leaf_id
            stamp = utc_timestamp()
            for entry in entries:
                entry["parentId"] = parent
                entry.setdefault("createdAt", stamp)
                parent = entry["id"]
            if len(redactor):
                # Ids are structure: a secret inside one must not orphan the chain.
                entries = [redact_keeping_ids(entry, redactor) for entry in entries]
            # Shielded: an abort arriving mid-write must not leave the store
            # holding entries the cached branch does not know about. The
            # cancellation lands at the run's next checkpoint instead.
            with anyio.CancelScope(shield=True):
                await self._store.append_many(entries)
                self.branch.extend(entries)
                self._lease.seen(entries)
        return entries

    # --- runs ---------------------------------------------------------------------------

    def _claim_run(self, *, accepts_input: bool) -> RunClaim:
        """Make this session busy, atomically: the claim's cancel scope and
        inbox exist from now on, so ``abort``/``steer`` work at once."""
        if self._claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        run_id = f"run_{uuid.uuid4().hex[:16]}" if accepts_input else None
        claim = self._claim = RunClaim(run_id, accepts_input=accepts_input)
        return claim

    def _follow(self, newer: list[SessionEntry] | None) -> None:
        """Another process or handle appended to this session since this
        handle last looked: continue from its newest entry, as a fresh load
        would, instead of forking the conversation from a stale leaf."""
        if newer is not None and self._loaded:
            self.branch.reset(newer, None)
            self.attention_sticky = None  # as on navigate: the frontier follows the branch

    def _release(self, claim: RunClaim) -> None:
        """Free the session, unless ``claim`` was already released (a dropped
        stream frees the session before its run has wound down)."""
        claim.inbox.close()
        if self._claim is claim:
            self._claim = None

    def _context(
        self, claim: RunClaim, journal: RunJournal | None = None, **settings: Any
    ) -> RunContext:
        hub = self._hub
        append_batch: AppendBatch = self._append_chain
        new_id = self.new_entry_id
        if journal is not None:
            # A replaying engine's run: its ids, and no append made twice.
            claim.run_id = journal.run_id
            write = self._append_chain

            async def append_batch(entries: list[SessionEntry]) -> list[SessionEntry]:
                return await journal.append(entries, write)

            new_id = journal.entry_id
        return RunContext(
            session_id=self._id,
            run_id=claim.run_id,
            config=self.agent.config,
            branch=self.branch,
            # Read at emit time: a resumed run takes over its checkpoint's id.
            emit_event=lambda event: hub.emit(event, claim.run_id),
            append_batch=append_batch,
            new_id=new_id,
            inbox=claim.inbox,
            attention_state=self._attention,
            journal=journal,
            **settings,
        )

    def _resolve_run(
        self, claim: RunClaim, journal: RunJournal | None = None, **options: Any
    ) -> RunContext:
        settings = resolve_run_settings(self.agent.config, self.current_model, **options)
        return self._context(claim, journal, **settings)

    def _begin(
        self, input: Any, options: Mapping[str, Any], journal: RunJournal | None = None
    ) -> tuple[RunClaim, RunContext, Callable[[], Awaitable[RunResult]]]:
        """Claim the session and validate input and options; on failure release
        the claim so nothing is stored or emitted. With a ``journal`` (a
        replaying engine, ``prism.durable``) the run is durable and takes
        no queued input: a replay could not reproduce it."""
        check_run_option_names(options)
        claim = self._claim_run(accepts_input=journal is None)
        try:
            messages = normalize_input(input)
            if journal is not None:
                if options.get("durable") is False:
                    raise ConfigError("a run under a durable-execution engine is always durable")
                options = {**options, "durable": True}
            run = self._resolve_run(claim, journal, **options)
        except BaseException:
            self._release(claim)
            raise

        async def execute() -> RunResult:
            result = await self._execute(claim, run, messages)
            assert result is not None  # only a resume finds nothing to do
            return result

        return claim, run, execute

    async def run(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunResult:
        """Run the agent loop on ``input`` and return the result.

        Raises ``SessionBusyError`` at once if a run is active, ``ConfigError``
        for bad input/options (nothing appended), and on failure the run's
        error (``RunAbortedError``, ``ProviderError``, ``MaxToolRoundsError``,
        ...) after emitting the ``error`` event. ``retry=False`` /
        ``compaction=False`` switch those off for this run.
        """
        _, _, execute = self._begin(input, options)
        return await execute()

    async def resume(self, **options: Unpack[RunOptions]) -> RunResult | None:
        """Continue the newest unfinished durable run on the branch from its
        last checkpoint (after a crash). Returns its result, or None when
        there is nothing to resume (no durable run, or the newest finished).
        Nothing recorded is redone: provider turns on the branch are not
        requested again, tool calls with a result are not run again, and a
        started call without a result is re-run only if its tool is
        ``idempotent`` (else answered with an ``interrupted`` error). Run
        options apply to the rest of the run; the run stays durable. A run
        a replaying engine owns (DBOS) is refused with ``ConfigError``: the
        engine recovers it. See docs/durable.md."""
        check_run_option_names(options)
        claim = self._claim_run(accepts_input=True)
        try:
            run = self._resolve_run(claim, None, **{**options, "durable": True})
        except BaseException:
            self._release(claim)
            raise
        return await self._execute(claim, run, [], resuming=True)

    def run_sync(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunResult:
        """``run`` for scripts and notebooks without an event loop: starts one
        (asyncio), runs, and returns the result. Refused inside a running
        event loop (``await session.run(...)`` there)."""
        _refuse_inside_event_loop("session.run_sync", "await session.run(...)")
        result: RunResult = anyio.run(lambda: self.run(input, **options))
        return result

    def resume_sync(self, **options: Unpack[RunOptions]) -> RunResult | None:
        """:meth:`resume` for scripts without an event loop."""
        _refuse_inside_event_loop("session.resume_sync", "await session.resume(...)")
        result: RunResult | None = anyio.run(lambda: self.resume(**options))
        return result

    async def _execute(
        self, claim: RunClaim, run: RunContext, messages: list[Message], resuming: bool = False
    ) -> RunResult | None:
        result: RunResult | None = None
        failure: BaseException | None = None
        try:
            with self._reporting(claim.run_id), claim.scope:
                # The store's lease: one run per session across processes too.
                async with self._lease.hold() as newer:
                    self._follow(newer)
                    await self.load()
                    if run.journal is not None:
                        await run.journal.begin(run, await self._store.list(self._id))
                    point = None
                    if resuming:
                        point = take_over(run, claim, self.branch.entries)
                        if point is None:
                            self._release(claim)
                            return None  # nothing unfinished: resuming is a no-op
                    # The run's model (its override, else the session's), so a
                    # listener (telemetry) reports what this run really uses.
                    run.emit({"type": "run_started", "model": run.current_model})
                    run.started = True
                    try:
                        result = await execute_run(run, messages, point)
                    except BaseException:
                        if run.durable:
                            await close_failed_run(run, claim.scope.cancel_called)
                        raise
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside (the caller's scope): still report it.
            self._release(claim)
            if run.started:
                self._emit_error(run, RunAbortedError(), claim.abort_reason)
            raise
        except Exception as error:
            failure = error
        self._release(claim)
        if result is None and failure is None:
            failure = RunAbortedError()  # the claim's scope was cancelled: abort()
        if failure is not None:
            if not run.started:
                # Failed (or aborted) while loading: nothing was emitted or stored.
                raise failure
            raise self._emit_error(run, failure, claim.abort_reason) from None
        assert result is not None
        finished: RunFinishedEvent = {
            "type": "run_finished",
            "usage": result.usage.copy(),
            "toolRounds": result.tool_rounds,
        }
        if result.stop_reason is not None:
            finished["stopReason"] = result.stop_reason
        run.emit(finished)
        return result

    def _emit_error(
        self, run: RunContext, error: BaseException, reason: str | None
    ) -> BaseException:
        """Emit the run's ``error`` event; return the exception the caller should see
        (its text redacted when secrets are configured)."""
        redactor = self.agent.config.redactor
        info: ErrorInfo = dict(error_info(error, redactor))  # type: ignore[assignment]
        if isinstance(error, RunAbortedError) and reason:
            info["details"] = {"reason": redactor.redact_text(reason)}
        run.emit({"type": "error", "error": info})
        if len(redactor) and redactor.contains(str(error)):
            if isinstance(error, ProviderError):
                return ProviderError(info)
            return PrismError(info["message"], code=info.get("code"))
        return error

    def stream(
        self, input: str | Message | Sequence[Message], **options: Unpack[RunOptions]
    ) -> RunStream:
        """Run like :meth:`run` and yield every event of the run as it happens.

        ``async for event in session.stream(...)`` or ``async with
        session.stream(...) as events:`` (then ``events.result``). Leaving
        the loop or the block early, or dropping the iterator, aborts the run
        and frees the session; see :class:`~prism.runtime.stream.RunStream`.
        """
        return RunStream(lambda: self._begin(input, options), self._hub.subscribe, self._release)

    def abort(self, reason: str | None = None) -> bool:
        """Cancel the active run (its error is ``RunAbortedError``, code
        ``"aborted"``). Returns False when there was no run to abort. Works
        from the instant the run is claimed, before it has loaded."""
        claim = self._claim
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

    def _inbox(self, what: str) -> Any:
        claim = self._claim
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
        """One entry of ``kind`` under the leaf (outside any run)."""
        entry: dict[str, Any] = {
            "id": self.new_entry_id(),
            "sessionId": self._id,
            "parentId": None,
            "kind": kind,
            **fields,
        }
        (stored,) = await self._append_chain([entry])  # type: ignore[list-item]
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
            "isRunning": self._claim is not None,
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
        claim = self._claim_run(accepts_input=False)
        try:
            with self._reporting(None):
                async with self._lease.hold() as newer:
                    self._follow(newer)
                    await self.load()
                    merged = merged_options(self.agent.config, options)
                    run = self._context(claim, retry=self.agent.config.retry)
                    return await compact_branch(run, merged, trigger="manual")
        finally:
            self._release(claim)

    async def auto_compact(self, **options: Any) -> SessionEntry | None:
        """Ask the compaction trigger now, exactly as a run does once before
        its first provider turn, and compact when it fires. Options are
        ``CompactionOptions`` fields layered over the agent's (for example
        ``trigger=...``). Returns the compaction entry, or None when no
        trigger is configured or it did not fire. Refused while a run is
        active."""
        claim = self._claim_run(accepts_input=False)
        try:
            with self._reporting(None):
                async with self._lease.hold():
                    await self.load()
                    config = self.agent.config
                    run = self._context(
                        claim,
                        retry=config.retry,
                        compaction=merged_options(config, options),
                        attention=run_attention(config.attention_compiler, None),
                    )
                    return await maybe_auto_compact(run)
        finally:
            self._release(claim)

    # --- branches and sessions -------------------------------------------------------------

    async def navigate(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id`` in this session; the next run branches from there."""
        if self._claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        await self.load()
        entries = await self._store.list(self._id)
        self.branch.reset(entries, entry_id)
        self._lease.seen(entries)
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
        new._lease.seen(copies)
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
