"""Leases with fencing tokens, and checkpoints saved under them.

A ``LeaseStore`` hands out time-limited exclusive leases on a key. Every
successful acquire of a key gets a fencing token greater than any token that
key had before, so "which worker is newest" is a number comparison, not a
clock comparison. A ``CheckpointStore`` keeps one versioned JSON document per
key; ``save`` is a compare-and-set on the version that also checks, in the
same transaction, that the caller's lease is still the current one (same
token, not expired) and that no newer token has written the document. A
worker whose lease lapsed or was taken over therefore gets
``WorkspaceFenceError`` and cannot overwrite newer state.

The built-in backends (memory, SQLite, PostgreSQL) keep leases and
checkpoints in one database, so that check is one transaction; see
:func:`create_fenced_store`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from prism.workspaces.errors import WorkspaceConfigError, WorkspaceFenceError
from prism.workspaces.scope import OwnershipScope, check_scope

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lasts unless renewed."""
MAX_LEASE_TTL = 300.0
"""The hard cap: no acquire or renew may ask for more."""

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,255}")


def check_key(key: object) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise WorkspaceConfigError(
            "a lease or checkpoint key must be 1-256 characters of letters, digits "
            "and . _ : / - starting with a letter or digit"
        )
    return key


def check_ttl(ttl: object) -> float:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise WorkspaceConfigError(f"lease ttl must be a number of seconds, not {ttl!r}")
    value = float(ttl)
    if not 0 < value <= MAX_LEASE_TTL:
        raise WorkspaceConfigError(
            f"lease ttl must be > 0 and at most {MAX_LEASE_TTL:g} s (the hard cap), not {ttl!r}"
        )
    return value


def check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner or len(owner) > 256:
        raise WorkspaceConfigError("a lease owner must be a non-empty string of <= 256 characters")
    return owner


@dataclass(frozen=True, slots=True)
class Lease:
    """A held lease. ``token`` is its fencing token; ``expires_at`` is in
    the store's clock (epoch seconds; the server's clock on PostgreSQL)."""

    key: str
    scope: OwnershipScope
    owner: str
    token: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One saved version of a key's document; ``fence`` is the token of the
    lease it was saved under."""

    key: str
    scope: OwnershipScope
    version: int
    fence: int
    data: Mapping[str, Any]


@runtime_checkable
class LeaseStore(Protocol):
    async def try_acquire(
        self, key: str, *, scope: OwnershipScope, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease | None:
        """The lease, or None while someone else holds it unexpired.
        ``WorkspaceOwnershipError`` when the key belongs to another scope."""
        ...

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """The lease with a new expiry; ``WorkspaceFenceError`` when it
        already lapsed or was taken over."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the lease up (a no-op once it lapsed or was taken over).
        The key's token is kept, so the next holder's is higher."""
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    async def load(self, key: str, *, scope: OwnershipScope) -> Checkpoint | None: ...

    async def save(
        self, key: str, data: Mapping[str, Any], *, version: int, lease: Lease
    ) -> Checkpoint:
        """Save ``data`` as version ``version + 1`` if the stored version is
        ``version`` (0: nothing stored yet) and ``lease`` is still current."""
        ...

    async def list(self, *, scope: OwnershipScope, prefix: str = "") -> list[Checkpoint]: ...


class FencedStore(LeaseStore, CheckpointStore, Protocol):
    """Leases and checkpoints in one database (what the built-ins are)."""

    async def close(self) -> None: ...


def check_save(key: str, version: object, lease: Lease) -> None:
    check_key(key)
    if not isinstance(lease, Lease):
        raise WorkspaceConfigError(f"save needs the Lease it runs under, not {lease!r}")
    if lease.key != key:
        raise WorkspaceFenceError(
            f"the lease is on {lease.key!r}, not {key!r}: a checkpoint is saved under its own key's lease"
        )
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise WorkspaceConfigError(f"version must be an integer >= 0, not {version!r}")


def lapsed_error(lease: Lease, current_token: int | None) -> WorkspaceFenceError:
    if current_token is not None and current_token > lease.token:
        why = f"was taken over (fencing token {current_token} > {lease.token})"
    else:
        why = "lapsed (its TTL ran out or it was released)"
    return WorkspaceFenceError(
        f"the lease on {lease.key!r} held by {lease.owner!r} {why}; nothing was written. "
        "Stop this worker's work on the key and acquire the lease again."
    )


def stale_error(
    key: str, version: int, stored_version: int, fence: int, stored_fence: int
) -> WorkspaceFenceError:
    if stored_fence > fence:
        return WorkspaceFenceError(
            f"checkpoint {key!r} was saved under a newer lease (fencing token {stored_fence} > "
            f"{fence}); nothing was written"
        )
    return WorkspaceFenceError(
        f"checkpoint {key!r} is at version {stored_version}, not {version}: it changed since "
        "it was read; nothing was written. Load it again."
    )


class CheckedFencedStore(ABC):
    """What every built-in ``FencedStore`` checks before it touches its
    database, in one order; a backend implements the underscored steps,
    which get checked arguments (and the ttl in seconds)."""

    async def try_acquire(
        self, key: str, *, scope: OwnershipScope, owner: str, ttl: float = DEFAULT_LEASE_TTL
    ) -> Lease | None:
        check_key(key)
        check_scope(scope)
        check_owner(owner)
        return await self._acquire(key, scope, owner, check_ttl(ttl))

    async def renew(self, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        return await self._renew(lease, check_ttl(ttl))

    async def load(self, key: str, *, scope: OwnershipScope) -> Checkpoint | None:
        check_key(key)
        check_scope(scope)
        return await self._load(key, scope)

    async def save(
        self, key: str, data: Mapping[str, Any], *, version: int, lease: Lease
    ) -> Checkpoint:
        check_save(key, version, lease)
        return await self._save(key, data, version, lease)

    @abstractmethod
    async def _acquire(
        self, key: str, scope: OwnershipScope, owner: str, seconds: float
    ) -> Lease | None: ...

    @abstractmethod
    async def _renew(self, lease: Lease, seconds: float) -> Lease: ...

    @abstractmethod
    async def _load(self, key: str, scope: OwnershipScope) -> Checkpoint | None: ...

    @abstractmethod
    async def _save(
        self, key: str, data: Mapping[str, Any], version: int, lease: Lease
    ) -> Checkpoint: ...

    @abstractmethod
    async def _list(self, scope: OwnershipScope, prefix: str) -> list[Checkpoint]: ...

    # Last: after it, ``list`` in this class body names the method.
    async def list(self, *, scope: OwnershipScope, prefix: str = "") -> list[Checkpoint]:
        check_scope(scope)
        return await self._list(scope, prefix)
