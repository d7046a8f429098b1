"""A session's runs: the claim, putting a run together, and driving it.

``AgentSession`` is the public face; :class:`RunDriver` owns what happens
between a caller's ``run()``/``resume()``/``stream()`` and the loop: the
claim (busy from its first instant), the run's settings, progress, port and
step runner (``prism.runtime.launch``), the writer's hold (previous run
closed, store lease held), resume or closing an unfinished run, and the
``run_started`` / ``run_finished`` / ``error`` events around the loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import anyio

from prism.contracts import ErrorInfo, Message, RunFinishedEvent, SessionEntry
from prism.errors import (
    ConfigError,
    PrismError,
    ProviderError,
    RunAbortedError,
    SessionBusyError,
    error_info,
)
from prism.runtime.approvals import normalize_decisions
from prism.runtime.autocompact import compact_branch, maybe_auto_compact, merged_options
from prism.runtime.config import AgentConfig
from prism.runtime.context import AttentionState, Run, RunClaim, RunJournal, RunPort
from prism.runtime.events import EventHub
from prism.runtime.input import normalize_input
from prism.runtime.launch import new_port, new_run
from prism.runtime.loop import Settle, execute_run
from prism.runtime.options import check_run_option_names
from prism.runtime.resolve import run_attention
from prism.runtime.result import RunResult
from prism.runtime.resume import close_unfinished, take_over
from prism.runtime.writer import SessionWriter
from prism.stores.base import SessionStore

__all__ = ["BUSY_MESSAGE", "RunDriver"]

BUSY_MESSAGE = "Agent session already has an active run"
Reporting = Callable[[str | None], AbstractContextManager[None]]
Begun = tuple[RunClaim, Run, Callable[[], Awaitable[RunResult]]]


class RunDriver:
    """The runs of one session handle (at most one claimed at a time)."""

    __slots__ = (
        "_attention",
        "_config",
        "_hub",
        "_load",
        "_new_id",
        "_reporting",
        "_session_id",
        "_store",
        "_writer",
        "claim",
    )

    def __init__(
        self,
        config: AgentConfig,
        session_id: str,
        store: SessionStore,
        writer: SessionWriter,
        hub: EventHub,
        attention: AttentionState,
        hooks: tuple[Callable[[], Awaitable[Any]], Reporting, Callable[[], str]],
    ) -> None:
        self._config = config
        self._session_id = session_id
        self._store = store
        self._writer = writer
        self._hub = hub
        self._attention = attention
        self._load, self._reporting, self._new_id = hooks
        # The active run (or manual compaction) from the instant it is claimed.
        self.claim: RunClaim | None = None

    def claim_run(self, *, accepts_input: bool) -> RunClaim:
        """Make the session busy, atomically: the claim's cancel scope and
        inbox exist from now on, so ``abort``/``steer`` work at once."""
        if self.claim is not None:
            raise SessionBusyError(BUSY_MESSAGE)
        run_id = f"run_{uuid.uuid4().hex[:16]}" if accepts_input else None
        claim = self.claim = RunClaim(run_id, accepts_input=accepts_input)
        return claim

    def release(self, claim: RunClaim) -> None:
        """Free the session, unless ``claim`` was already released (a dropped
        stream frees the session before its run has wound down)."""
        claim.inbox.close()
        if self.claim is claim:
            self.claim = None

    def port(self, claim: RunClaim, journal: RunJournal | None = None) -> RunPort:
        hub = self._hub
        return new_port(
            self._session_id,
            claim,
            self._writer.branch,
            self._attention,
            # Read at emit time: a resumed run takes over its checkpoint's id.
            lambda event: hub.emit(event, claim.run_id),
            self._writer.append_chain,
            journal.entry_id if journal is not None else self._new_id,
            self._store,
        )

    def begin(
        self, input: Any, options: Mapping[str, Any], journal: RunJournal | None = None
    ) -> Begun:
        """Claim the session and validate input and options; on failure release
        the claim so nothing is stored or emitted. With a ``journal`` (a
        replaying engine, ``prism.durable``) the run is durable and takes
        no queued input: a replay could not reproduce it."""
        check_run_option_names(options)
        claim = self.claim_run(accepts_input=journal is None)
        try:
            messages = normalize_input(input)
            if journal is not None:
                if options.get("durable") is False:
                    raise ConfigError("a run under a durable-execution engine is always durable")
                options = {**options, "durable": True}
            run = new_run(self._config, self.port(claim, journal), journal, **options)
        except BaseException:
            self.release(claim)
            raise

        async def execute() -> RunResult:
            result = await self.execute(claim, run, messages)
            assert result is not None  # only a resume finds nothing to do
            return result

        return claim, run, execute

    async def resume(
        self, options: Mapping[str, Any], decisions: Mapping[str, Any] | None = None
    ) -> RunResult | None:
        check_run_option_names(options)
        normalized = normalize_decisions(decisions)
        claim = self.claim_run(accepts_input=True)
        try:
            resolved: dict[str, Any] = {**options, "durable": True}
            run = new_run(self._config, self.port(claim), **resolved)
            run.steps.decisions = normalized  # type: ignore[attr-defined]
        except BaseException:
            self.release(claim)
            raise
        return await self.execute(claim, run, [], resuming=True)

    async def _prepare(self, run: Run, resuming: bool) -> tuple[bool, Settle | None]:
        """Once loaded and before ``run_started``: put a replayed run back
        where it began, take over the run to resume (``(False, None)`` when
        there is none), or close an unfinished one a new run finds."""
        steps = run.steps
        await steps.begin(run, lambda: self._store.list(self._session_id))
        if resuming:
            parse_errors = getattr(self._store, "parse_errors", None)
            point = take_over(run, self._writer.branch.entries, parse_errors or ())
            if point is None:
                return False, None
            return True, lambda: steps.settle(point)  # type: ignore[attr-defined]
        if self._writer.branch.has_unfinished_run:
            await close_unfinished(run)
        return True, None

    async def execute(
        self, claim: RunClaim, run: Run, messages: list[Message], resuming: bool = False
    ) -> RunResult | None:
        result: RunResult | None = None
        failure: BaseException | None = None
        progress = run.progress
        try:
            with self._reporting(claim.run_id), claim.scope:
                # One run per session across processes too, after the
                # previous run of this handle has closed.
                async with self._writer.exclusive():
                    await self._load()
                    go, settle = await self._prepare(run, resuming)
                    if not go:
                        self.release(claim)
                        return None  # nothing unfinished: resuming is a no-op
                    # The run's model (its override, else the session's), so a
                    # listener (telemetry) reports what this run really uses.
                    run.port.emit({"type": "run_started", "model": run.current_model})
                    progress.started = True
                    try:
                        result = await execute_run(run, messages, settle)
                    except BaseException:
                        await run.steps.fail(claim.scope.cancel_called)
                        raise
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside (the caller's scope): still report it.
            self.release(claim)
            if progress.started:
                self._emit_error(run, RunAbortedError(), claim.abort_reason)
            raise
        except Exception as error:
            failure = error
        self.release(claim)
        if result is None and failure is None:
            failure = RunAbortedError()  # the claim's scope was cancelled: abort()
        if failure is not None:
            if not progress.started:
                # Failed (or aborted) while loading: nothing was emitted or stored.
                raise failure
            raise self._emit_error(run, failure, claim.abort_reason) from None
        assert result is not None
        self._emit_finished(run, result)
        return result

    @staticmethod
    def _emit_finished(run: Run, result: RunResult) -> None:
        finished: RunFinishedEvent = {
            "type": "run_finished",
            "usage": result.usage.copy(),
            "toolRounds": result.tool_rounds,
        }
        if result.stop_reason is not None:
            finished["stopReason"] = result.stop_reason
        run.port.emit(finished)

    def _emit_error(self, run: Run, error: BaseException, reason: str | None) -> BaseException:
        """Emit the run's ``error`` event; return the exception the caller should see
        (its text redacted when secrets are configured)."""
        redactor = self._config.redactor
        info: ErrorInfo = dict(error_info(error, redactor))  # type: ignore[assignment]
        if isinstance(error, RunAbortedError) and reason:
            info["details"] = {"reason": redactor.redact_text(reason)}
        run.port.emit({"type": "error", "error": info})
        if len(redactor) and redactor.contains(str(error)):
            if isinstance(error, ProviderError):
                return ProviderError(info)
            return PrismError(info["message"], code=info.get("code"))
        return error

    # --- compaction outside a run -------------------------------------------------------

    async def compact(self, options: Mapping[str, Any], *, auto: bool) -> SessionEntry | None:
        """Manual compaction, or (``auto``) the run's compaction check now."""
        claim = self.claim_run(accepts_input=False)
        config = self._config
        try:
            with self._reporting(None):
                async with self._writer.exclusive():
                    await self._load()
                    merged = merged_options(config, options)
                    if not auto:
                        run = new_run(config, self.port(claim), resolve=False, retry=config.retry)
                        return await compact_branch(
                            run.settings, run.port, run.steps, merged, trigger="manual"
                        )
                    run = new_run(
                        config,
                        self.port(claim),
                        resolve=False,
                        retry=config.retry,
                        compaction=merged,
                        attention=run_attention(config.attention_compiler, None),
                    )
                    return await maybe_auto_compact(run.settings, run.port, run.steps)
        finally:
            self.release(claim)
