"""``AgentSession``: one conversation on a store, its branch, and its runs."""

from __future__ import annotations

import math
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from prism.branching import branch_entries, copy_branch
from prism.contracts import AgentEvent, ErrorInfo, Message, ModelConfig, SessionEntry
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
from prism.runtime import compaction as _compaction
from prism.runtime.branch import BranchCache
from prism.runtime.config import validate_model, validate_positive_int
from prism.runtime.events import AgentEventListener, EventHub
from prism.runtime.input import normalize_input
from prism.runtime.loop import RunResult, RunState, execute_run
from prism.runtime.options import coerce_compaction_options, coerce_retry_options
from prism.stores.base import SessionStore

if TYPE_CHECKING:
    from prism.runtime.agent import Agent

BUSY_MESSAGE = "Agent session already has an active run"

_UNSET: Any = object()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        self._running = False
        self._run_id: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._abort_reason: str | None = None
        self._queues_open = False
        self._steering: deque[Message] = deque()
        self._follow_ups: deque[Message] = deque()
        # Owned by the attention wiring: survives across runs of this session.
        self.attention_sticky: Any = None

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
        return self._running

    @property
    def current_model(self) -> ModelConfig:
        """The latest ``model_change`` on the branch, else the agent's model."""
        return self.branch.model or self.agent.config.model

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
            self._loaded = True
            middleware = self.agent.config.middleware
            if middleware is not None and middleware.has("session_start"):
                await middleware.run("session_start", {"sessionId": self._id})
        return self

    async def close(self) -> None:
        """Run ``session_shutdown`` middleware (once, if the session was loaded).
        Refused while a run is active; the session can be loaded again later."""
        if self._running:
            raise SessionBusyError(BUSY_MESSAGE)
        if not self._loaded:
            return
        self._loaded = False
        middleware = self.agent.config.middleware
        if middleware is not None and middleware.has("session_shutdown"):
            await middleware.run("session_shutdown", {"sessionId": self._id})

    def _append_lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    async def _append_chain(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append ``entries`` as a chain under the current leaf in one atomic batch."""
        redactor = self.agent.config.redactor
        async with self._append_lock():
            parent = self.branch.leaf_id
            stamp = _now()
            for entry in entries:
                entry["parentId"] = parent
                entry.setdefault("createdAt", stamp)
                parent = entry["id"]
            if len(redactor):
                entries = [redactor.redact_value(entry) for entry in entries]
            # Shielded: an abort arriving mid-write must not leave the store
            # holding entries the cached branch does not know about. The
            # cancellation lands at the run's next checkpoint instead.
            with anyio.CancelScope(shield=True):
                await self._store.append_many(entries)
                self.branch.extend(entries)
        return entries

    # --- runs ---------------------------------------------------------------------------

    def _claim(self) -> None:
        if self._running:
            raise SessionBusyError(BUSY_MESSAGE)
        self._running = True

    def _release(self) -> None:
        self._running = False
        self._run_id = None
        self._scope = None
        self._abort_reason = None
        self._close_queues()

    def _resolve_run(
        self,
        run_id: str,
        *,
        model: Any = None,
        system: Any = None,
        retry: Any = None,
        compaction: Any = None,
        max_tool_rounds: Any = None,
        metadata: Any = None,
        attention: Any = None,
    ) -> RunState:
        config = self.agent.config
        if system is None:
            run_system: tuple[str, ...] = ()
        elif isinstance(system, str):
            run_system = (system,) if system else ()
        elif isinstance(system, Sequence) and all(isinstance(s, str) for s in system):
            run_system = tuple(system)
        else:
            raise ConfigError("run option system must be a string or a list of strings")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ConfigError("run option metadata must be a mapping")
        if retry is None:
            run_retry = config.retry
        elif retry is False:
            run_retry = None
        else:
            run_retry = coerce_retry_options(retry)
        if compaction is None:
            run_compaction = config.compaction
        elif compaction is False:
            run_compaction = None
        else:
            run_compaction = coerce_compaction_options(compaction)
        return RunState(
            run_id=run_id,
            emit=lambda event: self._hub.emit(event, run_id),
            model=validate_model(model, "run option model") if model is not None else None,
            system=run_system,
            retry=run_retry,
            compaction=run_compaction,
            max_tool_rounds=(
                config.max_tool_rounds
                if max_tool_rounds is None
                else validate_positive_int(max_tool_rounds, "max_tool_rounds", minimum=0)
            ),
            metadata=dict(metadata or {}),
            tool_declarations=config.tools.declarations(),
            attention=_run_attention(config.attention_compiler, attention),
        )

    async def run(
        self,
        input: str | Message | Sequence[Message],
        *,
        model: ModelConfig | None = None,
        system: str | Sequence[str] | None = None,
        retry: Any = None,
        compaction: Any = None,
        max_tool_rounds: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        attention: Any = None,
    ) -> RunResult:
        """Run the agent loop on ``input`` and return the result.

        Raises ``SessionBusyError`` at once if a run is active, ``ConfigError``
        for bad input/options (nothing appended), and on failure the run's
        error (``RunAbortedError``, ``ProviderError``, ``MaxToolRoundsError``,
        ...) after emitting the ``error`` event. ``retry=False`` /
        ``compaction=False`` switch those off for this run.
        """
        self._claim()
        return await self._run_claimed(
            input,
            model=model,
            system=system,
            retry=retry,
            compaction=compaction,
            max_tool_rounds=max_tool_rounds,
            metadata=metadata,
            attention=attention,
        )

    def _prepare(self, input: Any, options: dict[str, Any]) -> tuple[list[Message], RunState]:
        """Validate input and options for a claimed run; on failure release the
        claim so nothing is stored or emitted."""
        try:
            run_id = f"run_{uuid.uuid4().hex[:16]}"
            return normalize_input(input), self._resolve_run(run_id, **options)
        except BaseException:
            self._release()
            raise

    async def _run_claimed(self, input: Any, **options: Any) -> RunResult:
        messages, run = self._prepare(input, options)
        return await self._execute(messages, run)

    async def _execute(self, messages: list[Message], run: RunState) -> RunResult:
        run_id = run.run_id
        try:
            await self.load()
        except BaseException:
            self._release()
            raise
        self._run_id = run_id
        self._queues_open = True
        scope = anyio.CancelScope()
        self._scope = scope
        run.emit({"type": "run_started"})
        run.started = True
        result: RunResult | None = None
        failure: BaseException | None = None
        try:
            with scope:
                result = await execute_run(self, run, messages)
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside (the caller's scope): still report it.
            reason = self._abort_reason
            self._release()
            self._emit_error(run, RunAbortedError(), reason)
            raise
        except Exception as error:
            failure = error
        reason = self._abort_reason
        self._release()
        if result is None and failure is None:
            failure = RunAbortedError()
        if failure is not None:
            raise self._emit_error(run, failure, reason) from None
        assert result is not None
        finished: dict[str, Any] = {
            "type": "run_finished",
            "usage": dict(result.usage),
            "toolRounds": result.tool_rounds,
        }
        if result.stop_reason is not None:
            finished["stopReason"] = result.stop_reason
        run.emit(finished)
        return result

    def _emit_error(self, run: RunState, error: BaseException, reason: str | None) -> BaseException:
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

    async def stream(
        self, input: str | Message | Sequence[Message], **options: Any
    ) -> AsyncIterator[AgentEvent]:
        """Run like :meth:`run` and yield every event of the run as it happens.

        A failed run ends the iteration after its ``error`` event without
        raising (the event carries the error); a busy session raises
        ``SessionBusyError`` at the first iteration. Leaving the loop early
        aborts the run; wrap the iterator in ``contextlib.aclosing`` when you
        may break out of it.
        """
        self._claim()
        messages, run = self._prepare(input, options)  # bad input raises here
        send, receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        unsubscribe = self._hub.subscribe(send.send_nowait)
        crashed: list[BaseException] = []

        async def runner() -> None:
            try:
                await self._execute(messages, run)
            except PrismError as error:
                if not run.started:  # failed before run_started: no error event was sent
                    crashed.append(error)
            except Exception as error:
                crashed.append(error)
            finally:
                unsubscribe()
                send.close()

        closed = False
        async with anyio.create_task_group() as group:
            group.start_soon(runner)
            try:
                async with receive:
                    async for event in receive:
                        yield event
            except GeneratorExit:
                # The consumer stopped early: abort the run instead of letting
                # GeneratorExit escape the task group as an exception group.
                closed = True
            finally:
                unsubscribe()
                group.cancel_scope.cancel()
        if closed:
            return
        if crashed:
            raise crashed[0]

    def abort(self, reason: str | None = None) -> bool:
        """Cancel the active run (its error is ``RunAbortedError``, code
        ``"aborted"``). Returns False when there was no run to abort."""
        if not self._running or self._scope is None:
            return False
        self._abort_reason = reason
        self._scope.cancel()
        return True

    # --- steering -------------------------------------------------------------------------

    def steer(self, message: str | Message | Sequence[Message]) -> None:
        """Queue input for the active run, injected before its next provider
        turn (after the tool results of the current turn)."""
        self._steering.extend(self._queued(message, "steer"))

    def follow_up(self, message: str | Message | Sequence[Message]) -> None:
        """Queue input to run as a new user turn, within the active run, once
        it would otherwise finish."""
        self._follow_ups.extend(self._queued(message, "follow_up"))

    def _queued(self, message: Any, what: str) -> list[Message]:
        if not self._running or not self._queues_open:
            raise NoActiveRunError(f"Cannot {what}: the session has no active run")
        return normalize_input(message)

    def _take_steering(self) -> list[Message]:
        taken = list(self._steering)
        self._steering.clear()
        return taken

    def _take_follow_up(self) -> Message | None:
        return self._follow_ups.popleft() if self._follow_ups else None

    def _close_queues(self) -> None:
        self._queues_open = False
        self._steering.clear()
        self._follow_ups.clear()

    # --- model, reads ---------------------------------------------------------------------

    async def set_model(self, model: ModelConfig) -> SessionEntry:
        """Append a ``model_change`` entry under the leaf; later provider turns
        (including the active run's next turn) use it."""
        checked = validate_model(model)
        await self.load()
        entry: SessionEntry = {
            "id": self.new_entry_id(),
            "sessionId": self._id,
            "parentId": None,
            "kind": "model_change",
            "model": checked,
        }
        (stored,) = await self._append_chain([entry])
        self._hub.emit(
            {"type": "model_changed", "model": stored["model"], "entryId": stored["id"]},  # type: ignore[typeddict-item]
            self._run_id,
        )
        return stored

    async def add_label(self, label: str, target_id: str | None = None) -> SessionEntry:
        """Append a ``label`` entry under the leaf naming ``target_id`` (default:
        the current leaf); ``prism.branching.labels`` reads them back."""
        if not isinstance(label, str) or not label:
            raise ConfigError("label must be a non-empty string")
        await self.load()
        target = target_id if target_id is not None else self.branch.leaf_id
        entry: dict[str, Any] = {
            "id": self.new_entry_id(),
            "sessionId": self._id,
            "parentId": None,
            "kind": "label",
            "label": label,
        }
        if target is not None:
            if await self._store.get(target) is None:
                raise UnknownNameError(f"unknown session entry id {target!r}")
            entry["targetId"] = target
        (stored,) = await self._append_chain([entry])  # type: ignore[list-item]
        return stored

    async def append_custom(self, custom_type: str, data: Any = None) -> SessionEntry:
        """Append one ``custom`` entry (host data such as memory records) under
        the leaf. Custom entries never reach a provider and are never
        summarized, so this is allowed during a run too. ``data`` must be
        JSON; the agent's secrets are redacted from it like from any entry."""
        if not isinstance(custom_type, str) or not custom_type:
            raise ConfigError("custom entry type must be a non-empty string")
        await self.load()
        entry: dict[str, Any] = {
            "id": self.new_entry_id(),
            "sessionId": self._id,
            "parentId": None,
            "kind": "custom",
            "customType": custom_type,
        }
        if data is not None:
            entry["data"] = data
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
            "isRunning": self._running,
            "runId": self._run_id,
            "entryCount": len(self.branch.entries),
            "messageCount": len(self.branch.messages),
        }

    # --- compaction ---------------------------------------------------------------------

    async def compact(self, **options: Any) -> SessionEntry:
        """Compact the current branch now; refused while a run is active.

        Options are ``CompactionOptions`` fields (snake_case), layered over the
        agent's compaction config. Returns the appended compaction entry.
        """
        if self._running:
            raise SessionBusyError(BUSY_MESSAGE)
        self._claim()
        try:
            await self.load()
            merged = _compaction.merged_options(self, options)
            return await _compaction.compact_session(self, merged, trigger="manual", run=None)
        finally:
            self._release()

    async def _maybe_auto_compact(self, run: RunState) -> None:
        await _compaction.maybe_auto_compact(self, run)

    # --- branches and sessions -------------------------------------------------------------

    async def navigate(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id`` in this session; the next run branches from there."""
        if self._running:
            raise SessionBusyError(BUSY_MESSAGE)
        await self.load()
        entries = await self._store.list(self._id)
        self.branch.reset(entries, entry_id)

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
        return new

    async def clone(self, *, id: str | None = None) -> AgentSession:
        """``fork`` at the current leaf: the same branch under a new session id."""
        return await self.fork(None, id=id)


def _run_attention(agent_compiler: Any, overlay: Any) -> Any:
    """The run's compiler: the agent's, narrowed (or switched off) by the run."""
    if agent_compiler is None and overlay is None:
        return None
    from prism.attention import resolve_run_compiler

    return resolve_run_compiler(agent_compiler, overlay)
