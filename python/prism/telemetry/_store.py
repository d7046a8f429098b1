"""A ``SessionStore`` wrapper that meters append latency."""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import metrics

from prism import __version__ as _prism_version
from prism.contracts import SessionEntry
from prism.errors import ConfigError
from prism.stores.base import SessionStore


class InstrumentedStore:
    """Delegates every call to the wrapped store; ``append``/``append_many``
    also record ``prism.store.append.duration`` (seconds, with the store's
    class name and the batch size). Methods a store adds beyond the protocol
    are forwarded unchanged."""

    def __init__(self, store: SessionStore, *, meter_provider: Any = None) -> None:
        if not isinstance(store, SessionStore):
            raise ConfigError("instrument_store() needs a SessionStore")
        self._store = store
        meter = metrics.get_meter("prism", _prism_version, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            "prism.store.append.duration", unit="s", description="Session store append latency"
        )
        self._kind = type(store).__name__

    @property
    def wrapped(self) -> SessionStore:
        return self._store

    def _record(self, started: float, entries: int, failed: bool) -> None:
        attributes: dict[str, Any] = {"prism.store": self._kind, "prism.store.entries": entries}
        if failed:
            attributes["error.type"] = "store_error"
        self._duration.record(time.perf_counter() - started, attributes)

    async def append(self, entry: SessionEntry) -> None:
        started = time.perf_counter()
        try:
            await self._store.append(entry)
        except BaseException:
            self._record(started, 1, True)
            raise
        self._record(started, 1, False)

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        started = time.perf_counter()
        try:
            await self._store.append_many(entries)
        except BaseException:
            self._record(started, len(entries), True)
            raise
        self._record(started, len(entries), False)

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        return await self._store.list(session_id)

    async def get(self, entry_id: str) -> SessionEntry | None:
        return await self._store.get(entry_id)

    async def list_sessions(self) -> builtins.list[str]:
        return await self._store.list_sessions()

    def __getattr__(self, name: str) -> Any:
        # Store-specific extras (claims, parse_errors, close, ...) pass through.
        return getattr(self._store, name)
