"""The worker runtime: runs observer -> reflector -> dropper for one session.

Nothing runs on its own. ``flush()`` runs every worker that has pending
work; ``after_run()`` is the opt-in post-run gate a host calls after a run
(it runs only workers whose token threshold is crossed, then compacts with
the memory strategy past ``compact_after_tokens``). One pipeline at a time:
a second ``flush()`` waits for the first, ``after_run()`` skips while one
is in flight. Each worker's records are appended as one entry after the
worker finished cleanly; a failing worker appends nothing, stops the
pipeline and is reported in ``last_error``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import anyio

from prism._clock import utc_timestamp
from prism._native import estimate_entry_tokens, estimate_message_tokens
from prism.compaction.observational_memory.ledger import (
    ObservationalMemoryLedger,
    fold_observational_memory_ledger,
)
from prism.compaction.observational_memory.projection import memory_tokens
from prism.compaction.observational_memory.records import (
    observations_dropped,
    observations_recorded,
    reflections_recorded,
)
from prism.compaction.observational_memory.settings import (
    ObservationalMemorySettings,
    resolve_observational_memory_settings,
)
from prism.compaction.observational_memory.strategy import (
    create_observational_memory_compaction_strategy,
)
from prism.contracts import ErrorInfo, ModelConfig
from prism.errors import ConfigError, PrismError
from prism.memory import workers
from prism.runtime import validate_model
from prism.security.redaction import SecretRedactor, require_redactor, with_secrets

Trigger = Literal["flush", "post_run"]
MAX_DEBUG_LINES = 200
# One observer prompt covers at most this many tokens of entries (or twice
# observe_after_tokens when that is larger); a longer backlog is chunked.
OBSERVER_CHUNK_TOKENS = 8_000
MAX_OBSERVER_CHUNKS = 64


@dataclass(slots=True)
class WorkerReport:
    worker: str
    turns: int = 0
    recorded: int = 0
    entry_id: str | None = None
    error: ErrorInfo | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "worker": self.worker,
            "turns": self.turns,
            "recorded": self.recorded,
        }
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(slots=True)
class FlushReport:
    """What one pipeline did. ``skipped`` names why nothing ran
    (``"missing_credential"``, ``"passive"``, ``"in_flight"``, ``"no_work"``)."""

    trigger: Trigger
    workers: list[WorkerReport] = field(default_factory=list)
    skipped: str | None = None
    error: ErrorInfo | None = None
    compaction_entry_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trigger": self.trigger,
            "workers": [w.to_json() for w in self.workers],
        }
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.error is not None:
            out["error"] = self.error
        if self.compaction_entry_id is not None:
            out["compactionEntryId"] = self.compaction_entry_id
        return out


class _WorkerPass(NamedTuple):
    """What every worker of one pipeline pass uses."""

    provider: Any
    redactor: SecretRedactor
    settings: ObservationalMemorySettings
    forced: bool  # flush(): work through everything, not only what crossed a threshold


class ObservationalMemoryRuntime:
    """Built by :func:`create_observational_memory_runtime`."""

    def __init__(
        self,
        *,
        session: Any,
        worker_provider: Any,
        worker_model: ModelConfig,
        settings: object,
        overrides: Mapping[str, Any] | None,
        credential: Any,
        redactor: SecretRedactor,
        keep_recent_entries: int,
    ) -> None:
        self.session = session
        self.worker_provider = worker_provider
        self.worker_model = worker_model
        self._settings_source = settings
        self._overrides = dict(overrides or {})
        self._credential = credential
        self._redactor: SecretRedactor = require_redactor(
            redactor, owner="observational memory runtime"
        )
        self._keep_recent_entries = keep_recent_entries
        self._lock: anyio.Lock | None = None
        self.in_flight = False
        self.last_error: ErrorInfo | None = None
        self.last_report: FlushReport | None = None
        self.debug_lines: list[dict[str, Any]] = []

    # --- public ---------------------------------------------------------------------

    @property
    def redactor(self) -> SecretRedactor:
        """What this runtime redacts with (built once from ``secrets``)."""
        return self._redactor

    def settings(self) -> ObservationalMemorySettings:
        """Resolve the settings now (the ``observational-memory`` key, then overrides)."""
        if isinstance(self._settings_source, ObservationalMemorySettings):
            return self._settings_source
        return resolve_observational_memory_settings(self._settings_source, self._overrides)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "inFlight": self.in_flight,
            "lastError": self.last_error,
            "lastRun": self.last_report.to_json() if self.last_report else None,
        }
        if self.debug_lines:
            out["debugLog"] = list(self.debug_lines)
        return out

    async def flush(self) -> FlushReport:
        """Run every worker with pending work now (waits for a pipeline in flight)."""
        settings = self.settings()  # a settings error raises before anything runs
        async with self._pipeline_lock():
            return await self._pipeline("flush", settings)

    async def after_run(self) -> FlushReport:
        """The post-run gate: workers past their thresholds, then compaction
        past ``compact_after_tokens``. Does nothing when ``passive`` is set or
        while another pipeline runs."""
        settings = self.settings()
        if settings.passive:
            return self._remember(FlushReport("post_run", skipped="passive"))
        lock = self._pipeline_lock()
        if lock.locked():
            return FlushReport("post_run", skipped="in_flight")
        async with lock:
            return await self._pipeline("post_run", settings)

    # --- pipeline -------------------------------------------------------------------

    def _pipeline_lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def _remember(self, report: FlushReport) -> FlushReport:
        self.last_report = report
        return report

    def _debug(self, settings: ObservationalMemorySettings, **line: Any) -> None:
        if not settings.debug_log:
            return
        line["at"] = utc_timestamp()
        self.debug_lines.append(self._redactor.redact_value(line))
        del self.debug_lines[:-MAX_DEBUG_LINES]

    async def _pipeline(
        self, trigger: Trigger, settings: ObservationalMemorySettings
    ) -> FlushReport:
        report = FlushReport(trigger)
        self.in_flight = True
        try:
            provider, redactor = await self._resolve_provider()
            if provider is None:
                report.skipped = "missing_credential"
                self._debug(settings, event="skipped", reason="missing_credential")
                return self._remember(report)
            forced = trigger == "flush"
            run = _WorkerPass(provider, redactor, settings, forced)
            # The observer reads a long backlog in chunks; flush() works through
            # all of it, the gate takes one chunk per run.
            steps = [self._observe] * (MAX_OBSERVER_CHUNKS if forced else 1)
            for step in (*steps, self._reflect, self._drop):
                worker = await step(run)
                if worker is None:
                    continue
                report.workers.append(worker)
                if worker.error is not None:
                    report.error = worker.error
                    self.last_error = worker.error
                    return self._remember(report)
            if not forced:
                report.compaction_entry_id = await self._maybe_compact(settings)
            if not report.workers and report.compaction_entry_id is None:
                report.skipped = "no_work"
            self.last_error = None
            return self._remember(report)
        except Exception as error:  # the session or the store failed, not a worker
            report.error = self._error_info(error, "memory_runtime_error")
            self.last_error = report.error
            return self._remember(report)
        finally:
            self.in_flight = False

    async def _resolve_provider(self) -> tuple[Any, SecretRedactor]:
        if self._credential is None:
            return self.worker_provider, self._redactor
        from prism.security.credentials import as_credential_resolver

        resolved = await as_credential_resolver(self._credential).resolve()
        if resolved is None:
            return None, self._redactor
        redactor = with_secrets(self._redactor, resolved.secrets)
        provider = self.worker_provider
        if not callable(getattr(provider, "generate", None)) and callable(provider):
            # A factory: the worker provider is built with the resolved value.
            provider = provider(resolved.value)
            if inspect.isawaitable(provider):
                provider = await provider
        return provider, redactor

    async def _branch(self) -> tuple[list[Any], ObservationalMemoryLedger]:
        entries = list(await self.session.branch_entries())
        return entries, fold_observational_memory_ledger(entries)

    async def _work(self, job: workers.WorkerJob, run: _WorkerPass, record: Any) -> WorkerReport:
        provider, redactor, settings, _forced = run
        report = WorkerReport(job.name)
        self._debug(settings, worker=job.name, event="started")
        try:
            report.turns = await workers.run_worker(
                job, provider, self.worker_model, settings.agent_max_turns, redactor
            )
        except Exception as error:
            report.error = self._error_info(error, "memory_worker_failed", redactor, job.name)
            self._debug(settings, worker=job.name, event="failed", error=report.error)
            return report
        data = record(job.pending)
        if data is not None:
            stored = await self.session.append_custom(data["type"], redactor.redact_value(data))
            report.entry_id = stored["id"]
            report.recorded = len(job.pending)
        self._debug(
            settings,
            worker=job.name,
            event="finished",
            turns=report.turns,
            recorded=report.recorded,
        )
        return report

    async def _observe(self, run: _WorkerPass) -> WorkerReport | None:
        redactor, settings = run.redactor, run.settings
        entries, ledger = await self._branch()
        start = 0
        if ledger.observed_up_to is not None:
            for index, entry in enumerate(entries):
                if entry["id"] == ledger.observed_up_to:
                    start = index + 1
                    break
        unobserved = [e for e in entries[start:] if workers.describe_entry(e) is not None]
        if not unobserved:
            return None
        sizes = [estimate_entry_tokens(e) for e in unobserved]
        if not run.forced and sum(sizes) < settings.observe_after_tokens:
            return None
        budget = max(OBSERVER_CHUNK_TOKENS, 2 * settings.observe_after_tokens)
        taken = 0
        for count, size in enumerate(sizes):
            taken += size
            if taken > budget and count:
                unobserved = unobserved[:count]
                break
        covers = unobserved[-1]["id"]
        job = workers.observer_job(
            unobserved, {e["id"] for e in entries}, ledger.active_observations(), redactor
        )
        # A coverage marker is recorded even when nothing was worth keeping,
        # so the same span is not observed again.
        return await self._work(job, run, lambda made: observations_recorded(made, covers))

    async def _reflect(self, run: _WorkerPass) -> WorkerReport | None:
        redactor, settings = run.redactor, run.settings
        entries, ledger = await self._branch()
        after = -1
        if ledger.reflected_up_to is not None:
            after = next(
                (i for i, e in enumerate(entries) if e["id"] == ledger.reflected_up_to), -1
            )
        active = {o["id"]: o for o in ledger.active_observations()}
        unreflected = [o for key, o in active.items() if ledger.positions[key] > after]
        if not unreflected:
            return None
        if not run.forced and memory_tokens(unreflected) < settings.reflect_after_tokens:
            return None
        covers = ledger.recorded_by(unreflected[-1]["id"])
        job = workers.reflector_job(
            unreflected, active, list(ledger.reflections.values()), redactor
        )
        return await self._work(job, run, lambda made: reflections_recorded(made, covers))

    async def _drop(self, run: _WorkerPass) -> WorkerReport | None:
        redactor, settings = run.redactor, run.settings
        _entries, ledger = await self._branch()
        active = {o["id"]: o for o in ledger.active_observations()}
        pool = memory_tokens(active.values())
        if pool <= settings.observations_pool_target_tokens:
            return None
        covers = ledger.record_entry_ids[-1] if ledger.record_entry_ids else None
        job = workers.dropper_job(
            active,
            list(ledger.reflections.values()),
            pool,
            settings.observations_pool_target_tokens,
            redactor,
        )
        return await self._work(
            job, run, lambda made: observations_dropped(made, covers) if made else None
        )

    async def _maybe_compact(self, settings: ObservationalMemorySettings) -> str | None:
        session = self.session
        if getattr(session, "is_running", False):
            return None  # compaction is refused during a run; the next gate retries
        messages = await session.messages()
        tokens = sum(estimate_message_tokens(m) for m in messages)
        if tokens < settings.compact_after_tokens:
            return None
        strategy = create_observational_memory_compaction_strategy(
            keep_recent_entries=self._keep_recent_entries,
            settings=settings,
        )
        entry = await session.compact(strategy=strategy)
        entry_id: str = entry["id"]
        return entry_id

    def _error_info(
        self,
        error: BaseException,
        default_code: str,
        redactor: SecretRedactor | None = None,
        worker: str | None = None,
    ) -> ErrorInfo:
        redactor = redactor or self._redactor
        if isinstance(error, PrismError):
            info: ErrorInfo = {"message": str(error), "code": error.code}
        else:
            info = {"message": f"{type(error).__name__}: {error}", "code": default_code}
        if worker is not None:
            info["message"] = f"{worker} worker failed: {info['message']}"
            info["details"] = {"worker": worker}
        info["message"] = redactor.redact_text(info["message"])
        return info


def create_observational_memory_runtime(
    *,
    session: Any,
    worker_provider: Any,
    worker_model: Mapping[str, Any],
    store: Any = None,
    settings: object = None,
    overrides: Mapping[str, Any] | None = None,
    credential: Any = None,
    redactor: SecretRedactor,
    keep_recent_entries: int = 8,
) -> ObservationalMemoryRuntime:
    """The explicit worker runtime for ``session`` (an ``AgentSession``).

    ``worker_provider``/``worker_model`` run the workers (an AIProvider, or
    with ``credential`` a factory ``(value) -> AIProvider``). ``store``, when
    given, must be the session's store. ``settings`` (SettingsProvider or
    mapping holding the ``observational-memory`` key, or resolved settings)
    and ``overrides`` are resolved at every ``flush()``/``after_run()``.
    ``credential`` (a ``CredentialSource``) is resolved before each pipeline;
    when it resolves to nothing the workers are skipped. ``secrets`` (strings
    or a redactor) are redacted from prompts, records, errors and status.
    Constructing it starts nothing.
    """
    for name in ("branch_entries", "append_custom", "messages", "compact"):
        if not callable(getattr(session, name, None)):
            raise ConfigError(f"observational memory runtime: session has no {name}() method")
    if store is not None and getattr(session, "store", None) is not store:
        raise ConfigError("observational memory runtime: store must be the session's own store")
    if worker_provider is None or not (
        callable(getattr(worker_provider, "generate", None))
        or (credential is not None and callable(worker_provider))
    ):
        raise ConfigError(
            "observational memory runtime: worker_provider must implement AIProvider "
            "(or be a factory taking the resolved credential)"
        )
    model = validate_model(worker_model, "worker_model")
    if isinstance(keep_recent_entries, bool) or not isinstance(keep_recent_entries, int):
        raise ConfigError("keep_recent_entries must be an integer >= 0")
    if keep_recent_entries < 0:
        raise ConfigError("keep_recent_entries must be an integer >= 0")
    if credential is not None:
        from prism.security.credentials import as_credential_resolver

        as_credential_resolver(credential)  # a malformed source fails here, not mid-flush
    if not isinstance(settings, ObservationalMemorySettings):
        resolve_observational_memory_settings(settings, overrides)  # fail at construction too
    return ObservationalMemoryRuntime(
        session=session,
        worker_provider=worker_provider,
        worker_model=model,
        settings=settings,
        overrides=overrides,
        credential=credential,
        redactor=redactor,
        keep_recent_entries=keep_recent_entries,
    )


__all__ = [
    "FlushReport",
    "ObservationalMemoryRuntime",
    "WorkerReport",
    "create_observational_memory_runtime",
]
