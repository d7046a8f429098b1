"""The write side of one session handle: the one way entries reach the store.

Every append (a run's steps, ``set_model``, labels, custom entries,
compaction) goes through :class:`SessionWriter`: under the store's lease
(one writer per session across handles and processes), after following
what others appended since this handle last looked, as one atomic chain
under the leaf. A run also holds the handle's run lock until it has wound
down, so a run left behind by a dropped stream finishes its closing writes
before the next run of the handle appends anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from prism._clock import utc_timestamp
from prism.contracts import SessionEntry
from prism.runtime.branch import BranchCache
from prism.runtime.context import AttentionState
from prism.security.redaction import SecretRedactor, redact_keeping_ids
from prism.stores.base import SessionLeaseHolder, SessionStore

__all__ = ["SessionWriter"]


class SessionWriter:
    __slots__ = (
        "_append_lock",
        "_attention",
        "_lease",
        "_redactor",
        "_run_lock",
        "_store",
        "branch",
        "loaded",
    )

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        redactor: SecretRedactor,
        branch: BranchCache,
        attention: AttentionState,
    ) -> None:
        self._store = store
        self._redactor = redactor
        self._lease = SessionLeaseHolder(store, session_id)  # the store's run lease
        self._attention = attention
        self._append_lock: anyio.Lock | None = None
        # Held by a run (or compaction) until it has wound down completely,
        # its closing writes included: a dropped stream frees the session
        # early, and the next run waits here for the old one's closing.
        self._run_lock: anyio.Lock | None = None
        self.branch = branch
        self.loaded = False

    def seen(self, entries: list[SessionEntry]) -> None:
        """This handle loaded (or copied) these entries as the newest."""
        self._lease.seen(entries)

    def follow(self, newer: list[SessionEntry] | None) -> None:
        """Another process or handle appended to this session since this
        handle last looked: continue from its newest entry, as a fresh load
        would, instead of forking the conversation from a stale leaf."""
        if newer is not None and self.loaded:
            self.branch.reset(newer, None)
            self._attention.frontier = None  # as on navigate: it follows the branch

    @asynccontextmanager
    async def claimed(self) -> AsyncIterator[None]:
        """The store's lease, following what others appended meanwhile. A
        run of this handle already holding it shares it."""
        async with self._lease.hold() as newer:
            self.follow(newer)
            yield

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        """A run's or compaction's hold: after the previous run of this
        handle has wound down (its closing writes included), then the lease."""
        lock = self._run_lock
        if lock is None:
            lock = self._run_lock = anyio.Lock(fast_acquire=True)
        try:
            # No checkpoint when free: an abort in the run's first instant
            # lands where it always did, after run_started.
            lock.acquire_nowait()
        except anyio.WouldBlock:
            await lock.acquire()
        try:
            async with self.claimed():
                yield
        finally:
            lock.release()

    async def append_chain(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append ``entries`` as a chain under the current leaf in one atomic
        batch; returns the stored (redacted when secrets are set) copies.
        The caller holds the lease (``claimed``/``exclusive``)."""
        lock = self._append_lock
        if lock is None:
            # Uncontended (the common case: one run appends at a time) the
            # lock is taken without a trip through the event loop; the run
            # still reaches a cancellation point at its next provider or
            # tool await.
            lock = self._append_lock = anyio.Lock(fast_acquire=True)
        redactor = self._redactor
        async with lock:
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
