"""The ``SessionStore`` protocol every store implements.

Consistency contract shared by all stores (docs/stores.md has each store's
specifics): an ``append_many`` batch is all-or-nothing; entries come back
from ``list`` in append order; an id is unique within a store and a
duplicate is refused with ``DuplicateEntryError`` before anything is
written; entries are never rewritten or deleted.

Session leases (``LeasingSessionStore.claim``): a run holds its session's
lease from before it loads the session until it ends, so one session has at
most one active run across every process (and, for a shared database, every
host) using the store. ``claim`` never waits: a session someone else holds
raises ``SessionBusyError`` at once, the same error a second run on one
``AgentSession`` gets. A lease ends on ``release()`` (idempotent) or when the
holding process dies (the OS drops file locks; a database drops a dead
connection's locks). The runtime claims through ``claim_session``, which
falls back to a process-local lease for a third-party store without
``claim``.
"""

from __future__ import annotations

import builtins
import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol, runtime_checkable

import anyio

from prism.contracts import SessionEntry
from prism.errors import SessionBusyError, StoreError

_KINDS = frozenset({"message", "summary", "model_change", "custom", "compaction", "label"})


@runtime_checkable
class SessionStore(Protocol):
    async def append(self, entry: SessionEntry) -> None:
        """Persist one entry, refusing a duplicate id."""
        ...

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        """Persist a batch atomically: either every entry lands or none does."""
        ...

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        """Entries of one session in append order."""
        ...

    async def get(self, entry_id: str) -> SessionEntry | None:
        """The entry with this id, or None."""
        ...

    async def list_sessions(self) -> builtins.list[str]:
        """Session ids present in the store, in first-appearance order."""
        ...


class SessionLease:
    """A held claim on one session, returned by ``claim``.

    Release it with ``await lease.release()`` (safe to call twice) or use it
    as ``async with await store.claim(session_id):``. ``on_release`` is the
    store's undo (close a lock file, unlock an advisory lock); it may be a
    plain or an async function and runs exactly once.
    """

    __slots__ = ("_on_release", "session_id")

    def __init__(self, session_id: str, on_release: Callable[[], Awaitable[None] | None]) -> None:
        self.session_id = session_id
        self._on_release: Callable[[], Awaitable[None] | None] | None = on_release

    @property
    def held(self) -> bool:
        return self._on_release is not None

    @property
    def lost(self) -> bool:
        """True once the store knows this held lease no longer excludes other
        claimants. Only a database lease can be lost (its connection died or
        its lock is gone; see docs/postgres.md); the store then refuses
        appends to the session with ``SessionLeaseLostError`` until the lease
        is released."""
        return False

    async def release(self) -> None:
        on_release, self._on_release = self._on_release, None
        if on_release is not None:
            result = on_release()
            if inspect.isawaitable(result):
                await result

    async def __aenter__(self) -> SessionLease:
        return self

    async def __aexit__(self, *exc: object) -> None:
        # Shielded: a run leaving by cancellation (abort) must still give its
        # session back, even when releasing awaits (a database unlock).
        with anyio.CancelScope(shield=True):
            await self.release()


@runtime_checkable
class LeasingSessionStore(SessionStore, Protocol):
    """A store that can hold "one active run per session" beyond this process.

    Every store Prism ships implements it. Kept apart from ``SessionStore``
    so a store written before leases existed still satisfies that protocol.
    """

    async def claim(self, session_id: str) -> SessionLease:
        """Claim ``session_id`` for one run without waiting.

        Raises ``SessionBusyError`` when anyone holds it (another process,
        another store instance on the same data, or this one), and
        ``StoreError`` when the claim cannot be recorded (e.g. the lock
        directory cannot be created). Claiming a session that has no entries
        yet is allowed: the run that creates it holds it."""
        ...


def busy_error(session_id: str, holder: str = "another run") -> SessionBusyError:
    """The one busy error every store raises, naming the session."""
    return SessionBusyError(f"session {session_id!r} is busy: {holder} holds it")


def check_key(value: object, what: str) -> str:
    """A lookup key (``list``/``get``): any string; anything else is a
    StoreError instead of a TypeError from a dict or a database driver."""
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    return value


def check_path(path: object, what: str) -> str:
    """A store's file path as a str, refused with StoreError when it is not
    path-like or holds a NUL byte (which every OS call would reject with a
    ValueError)."""
    try:
        text: str | bytes = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise StoreError(
            f"{what} path must be a str or os.PathLike, got {type(path).__name__}"
        ) from None
    if isinstance(text, bytes):
        raise StoreError(f"{what} path must be a str, not bytes")
    if not text or "\x00" in text:
        raise StoreError(f"{what} path must be non-empty and hold no NUL byte")
    return text


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise StoreError("session id must be a non-empty string")
    return session_id


class LocalClaims:
    """Process-local leases: the memory store's claims, and the fallback for a
    store without ``claim``."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    def claim(self, session_id: str) -> SessionLease:
        check_session_id(session_id)
        if session_id in self._held:
            raise busy_error(session_id)
        self._held.add(session_id)
        return SessionLease(session_id, lambda: self._held.discard(session_id))

    def holding(self) -> bool:
        return bool(self._held)


_fallback_claims: dict[int, LocalClaims] = {}


async def claim_session(store: SessionStore, session_id: str) -> SessionLease:
    """Claim through the store when it can; otherwise hold a lease that only
    excludes other runs in this process (keyed by the store object)."""
    if isinstance(store, LeasingSessionStore):
        return await store.claim(session_id)
    claims = _fallback_claims.setdefault(id(store), LocalClaims())
    lease = claims.claim(session_id)

    async def release() -> None:
        # Referencing ``store`` here keeps it alive while the lease is held,
        # so its id cannot be reused by another object in the meantime.
        await lease.release()
        if not claims.holding() and _fallback_claims.get(id(store)) is claims:
            del _fallback_claims[id(store)]

    return SessionLease(session_id, release)


async def last_entry_id(store: SessionStore, session_id: str) -> str | None:
    """Id of the session's last stored entry (None when it has none). Uses
    the store's cheap ``last_entry_id`` when it has one, else ``list``."""
    fast = getattr(store, "last_entry_id", None)
    if fast is not None:
        result: str | None = await fast(session_id)
        return result
    entries = await store.list(session_id)
    return entries[-1]["id"] if entries else None


_UNSEEN = object()


class SessionLeaseHolder:
    """One session handle's share of its store lease, and what it has seen.

    Runs of one ``AgentSession`` are serialized by the session itself, but a
    run that was dropped (a stream closed early) frees the session before it
    has wound down, and the next run may start meanwhile. Those overlapping
    runs of the same handle share one lease: it is claimed by the first and
    released when the last one ends, so the next run is not refused by its
    own predecessor, while every other claimant (another handle, store
    instance or process) still gets ``SessionBusyError``.

    The handle reports the last entry it knows to be stored (``seen``). When
    ``hold`` claims the lease and another writer has appended to the session
    since, it yields the session's fresh entries, so the run continues from
    them instead of forking from a stale leaf; otherwise it yields None.
    """

    __slots__ = ("_lease", "_seen", "_session_id", "_store", "_users")

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._lease: SessionLease | None = None
        self._users = 0
        self._seen: object = _UNSEEN

    @property
    def held(self) -> bool:
        return self._lease is not None

    def seen(self, entries: Sequence[SessionEntry]) -> None:
        """The handle loaded these entries, or appended them as the newest."""
        if entries:
            self._seen = entries[-1]["id"]
        elif self._seen is _UNSEEN:
            self._seen = None

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[builtins.list[SessionEntry] | None]:
        newer: builtins.list[SessionEntry] | None = None
        if self._lease is None:
            self._lease = await claim_session(self._store, self._session_id)
            try:
                newer = await self._newer_entries()
            except BaseException:
                await self._give_back()
                raise
        self._users += 1
        try:
            yield newer
        finally:
            self._users -= 1
            if self._users == 0:
                await self._give_back()

    async def _give_back(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            with anyio.CancelScope(shield=True):
                await lease.release()

    async def _newer_entries(self) -> builtins.list[SessionEntry] | None:
        if self._seen is _UNSEEN:
            return None  # never loaded: the run's load reads everything anyway
        if await last_entry_id(self._store, self._session_id) == self._seen:
            return None
        entries = await self._store.list(self._session_id)
        self._seen = entries[-1]["id"] if entries else None
        return entries


def validate_entry_for_append(entry: object) -> SessionEntry:
    """Cheap structural check done before any write, so a bad entry is
    refused with a message naming the field and nothing is half-written.
    Deep per-kind validation is the native parser's job on read."""
    if not isinstance(entry, dict):
        raise StoreError(f"session entry must be a dict, got {type(entry).__name__}")
    for key in ("id", "sessionId"):
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise StoreError(f"session entry field {key!r} must be a non-empty string")
    parent = entry.get("parentId", None)
    if "parentId" not in entry or not (parent is None or isinstance(parent, str)):
        raise StoreError("session entry field 'parentId' must be a string or null")
    kind = entry.get("kind")
    if kind not in _KINDS:
        raise StoreError(f"session entry field 'kind' has unknown value {kind!r}")
    return entry  # type: ignore[return-value]
