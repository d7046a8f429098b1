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
    DEFAULT_LEASE_TTL,
    Checkpoint,
    Lease,
    check_key,
    check_owner,
    check_save,
    check_ttl,
    lapsed_error,
    stale_error,
)
from prism.workspaces.scope import OwnershipScope, check_scope, ownership_error


@dataclass(slots=True)
class _LeaseRow:
    scope: OwnershipScope
    owner: str
    token: int
    expires_at: float


class MemoryFencedStore:
    """A ``LeaseStore`` and ``CheckpointStore`` in memory. ``clock`` (epoch
    seconds) is for tests that need time to pass without waiting."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.time
        self._leases: dict[str, _LeaseRow] = {}
        self._checkpoints: dict[str, Checkpoint] = {}

    async def try_acquire(
        self, key: str, *, scope: OwnershipScope, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease | None:
        check_key(key)
        check_scope(scope)
        check_owner(owner)
        seconds = check_ttl(ttl)
        now = self._clock()
        row = self._leases.get(key)
        if row is not None and row.scope != scope:
            raise ownership_error("lease", key, scope)
        if row is not None and row.expires_at > now:
            return None
        token = 1 if row is None else row.token + 1
        self._leases[key] = _LeaseRow(scope, owner, token, now + seconds)
        return Lease(key, scope, owner, token, now + seconds)

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        seconds = check_ttl(ttl)
        now = self._clock()
        row = self._current(lease, now)
        row.expires_at = now + seconds
        return Lease(lease.key, lease.scope, lease.owner, lease.token, row.expires_at)

    async def release(self, lease: Lease) -> None:
        row = self._leases.get(lease.key)
        if row is not None and row.token == lease.token:
            row.expires_at = 0.0

    def _current(self, lease: Lease, now: float) -> _LeaseRow:
        row = self._leases.get(lease.key)
        if row is None or row.token != lease.token or row.expires_at <= now:
            raise lapsed_error(lease, None if row is None else row.token)
        return row

    async def load(self, key: str, *, scope: OwnershipScope) -> Checkpoint | None:
        check_key(key)
        check_scope(scope)
        found = self._checkpoints.get(key)
        if found is None:
            return None
        if found.scope != scope:
            raise ownership_error("checkpoint", key, scope)
        return copy.deepcopy(found)

    async def save(
        self, key: str, data: Mapping[str, Any], *, version: int, lease: Lease
    ) -> Checkpoint:
        check_key(key)
        check_save(key, version, lease)
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

    async def list(self, *, scope: OwnershipScope, prefix: str = "") -> list[Checkpoint]:
        check_scope(scope)
        return [
            copy.deepcopy(found)
            for key, found in sorted(self._checkpoints.items())
            if found.scope == scope and key.startswith(prefix)
        ]

    async def close(self) -> None:
        return None
