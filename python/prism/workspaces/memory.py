"""Leases and checkpoints in this process's memory (tests, one-process hosts).

Nothing survives the process; everything else behaves as on SQLite and
PostgreSQL: the same tokens, expiry, fencing and ownership checks.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prism.workspaces.fencing import (
    CheckedFencedStore,
    Checkpoint,
    Lease,
    lapsed_error,
    stale_error,
)
from prism.workspaces.scope import OwnershipScope, ownership_error


@dataclass(slots=True)
class _LeaseRow:
    scope: OwnershipScope
    owner: str
    token: int
    expires_at: float


class MemoryFencedStore(CheckedFencedStore):
    """A ``LeaseStore`` and ``CheckpointStore`` in memory. ``clock`` (epoch
    seconds) is for tests that need time to pass without waiting."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.time
        self._leases: dict[str, _LeaseRow] = {}
        self._checkpoints: dict[str, Checkpoint] = {}

    async def _acquire(
        self, key: str, scope: OwnershipScope, owner: str, seconds: float
    ) -> Lease | None:
        now = self._clock()
        row = self._leases.get(key)
        if row is not None and row.scope != scope:
            raise ownership_error("lease", key, scope)
        if row is not None and row.expires_at > now:
            return None
        token = 1 if row is None else row.token + 1
        self._leases[key] = _LeaseRow(scope, owner, token, now + seconds)
        return Lease(key, scope, owner, token, now + seconds)

    async def _renew(self, lease: Lease, seconds: float) -> Lease:
        now = self._clock()
        row = self._current(lease, now)
        row.expires_at = now + seconds
        return Lease(lease.key, lease.scope, lease.owner, lease.token, row.expires_at)

    async def release(self, lease: Lease) -> None:
        row = self._leases.get(lease.key)
        if row is not None and row.token == lease.token and row.scope == lease.scope:
            row.expires_at = 0.0

    def _current(self, lease: Lease, now: float) -> _LeaseRow:
        row = self._leases.get(lease.key)
        if row is not None and row.scope != lease.scope:
            raise ownership_error("lease", lease.key, lease.scope)
        if row is None or row.token != lease.token or row.expires_at <= now:
            raise lapsed_error(lease, None if row is None else row.token)
        return row

    async def _load(self, key: str, scope: OwnershipScope) -> Checkpoint | None:
        found = self._checkpoints.get(key)
        if found is None:
            return None
        if found.scope != scope:
            raise ownership_error("checkpoint", key, scope)
        return copy.deepcopy(found)

    async def _save(
        self, key: str, data: Mapping[str, Any], version: int, lease: Lease
    ) -> Checkpoint:
        document = json.loads(json.dumps(data))  # JSON only, and no aliasing
        self._current(lease, self._clock())
        found = self._checkpoints.get(key)
        if found is not None and found.scope != lease.scope:
            raise ownership_error("checkpoint", key, lease.scope)
        stored_version = 0 if found is None else found.version
        stored_fence = 0 if found is None else found.fence
        if stored_version != version or stored_fence > lease.token:
            raise stale_error(key, version, stored_version, lease.token, stored_fence)
        saved = Checkpoint(key, lease.scope, version + 1, lease.token, document)
        self._checkpoints[key] = saved
        return copy.deepcopy(saved)

    async def _list(self, scope: OwnershipScope, prefix: str) -> list[Checkpoint]:
        return [
            copy.deepcopy(found)
            for key, found in sorted(self._checkpoints.items())
            if found.scope == scope and key.startswith(prefix)
        ]

    async def close(self) -> None:
        return None
