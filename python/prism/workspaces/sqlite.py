"""Leases and checkpoints in one SQLite file, shared by processes on a host.

Every operation is one ``BEGIN IMMEDIATE`` transaction, so a checkpoint save
reads the lease row and writes the document atomically with respect to any
other process's acquire. Expiry uses this host's clock (``time.time``), which
every process on the host shares. Calls run in a worker thread (a write may
wait up to ``busy_timeout_ms`` for another process).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from prism.workspaces.errors import WorkspaceStoreError
from prism.workspaces.fencing import (
    CheckedFencedStore,
    Checkpoint,
    Lease,
    lapsed_error,
    stale_error,
)
from prism.workspaces.scope import OwnershipScope, ownership_error

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS prism_ws_leases (
    key TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    token INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS prism_ws_checkpoints (
    key TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    version INTEGER NOT NULL,
    fence INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS prism_ws_checkpoints_scope ON prism_ws_checkpoints (scope, key);
"""


class SqliteFencedStore(CheckedFencedStore):
    """A ``LeaseStore`` and ``CheckpointStore`` over one SQLite file (WAL)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] | None = None,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self.path = Path(path)
        self._clock = clock or time.time
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    # --- plumbing -----------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(_SCHEMA)
            except (sqlite3.Error, OSError) as exc:
                raise WorkspaceStoreError(
                    f"workspace store {str(self.path)!r} could not be opened: {exc}"
                ) from None
            self._conn = conn
        return self._conn

    def _transaction(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise WorkspaceStoreError(
                    f"workspace store {str(self.path)!r}: {exc}; nothing was written"
                ) from None
            try:
                result = work(conn)
                conn.execute("COMMIT")
                return result
            except BaseException as exc:
                conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise WorkspaceStoreError(
                        f"workspace store {str(self.path)!r}: {exc}; nothing was written"
                    ) from None
                raise

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return await anyio.to_thread.run_sync(self._transaction, work)

    # --- leases ---------------------------------------------------------------

    async def _acquire(
        self, key: str, scope: OwnershipScope, owner: str, seconds: float
    ) -> Lease | None:
        encoded = scope.encode()

        def acquire(conn: sqlite3.Connection) -> Lease | None:
            now = self._clock()
            row = conn.execute(
                "SELECT scope, token, expires_at FROM prism_ws_leases WHERE key = ?", (key,)
            ).fetchone()
            if row is not None and row[0] != encoded:
                raise ownership_error("lease", key, scope)
            if row is not None and row[2] > now:
                return None
            token = 1 if row is None else int(row[1]) + 1
            conn.execute(
                "INSERT INTO prism_ws_leases (key, scope, owner, token, expires_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, "
                "token = excluded.token, expires_at = excluded.expires_at",
                (key, encoded, owner, token, now + seconds),
            )
            return Lease(key, scope, owner, token, now + seconds)

        return await self._run(acquire)

    async def _renew(self, lease: Lease, seconds: float) -> Lease:

        def renew(conn: sqlite3.Connection) -> Lease:
            now = self._clock()
            self._check_current(conn, lease, now)
            conn.execute(
                "UPDATE prism_ws_leases SET expires_at = ? WHERE key = ?",
                (now + seconds, lease.key),
            )
            return Lease(lease.key, lease.scope, lease.owner, lease.token, now + seconds)

        return await self._run(renew)

    async def release(self, lease: Lease) -> None:
        def release(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE prism_ws_leases SET expires_at = 0 "
                "WHERE key = ? AND token = ? AND scope = ?",
                (lease.key, lease.token, lease.scope.encode()),
            )

        await self._run(release)

    def _check_current(self, conn: sqlite3.Connection, lease: Lease, now: float) -> None:
        row = conn.execute(
            "SELECT token, expires_at, scope FROM prism_ws_leases WHERE key = ?", (lease.key,)
        ).fetchone()
        if row is not None and row[2] != lease.scope.encode():
            raise ownership_error("lease", lease.key, lease.scope)
        if row is None or int(row[0]) != lease.token or row[1] <= now:
            raise lapsed_error(lease, None if row is None else int(row[0]))

    # --- checkpoints ----------------------------------------------------------

    async def _load(self, key: str, scope: OwnershipScope) -> Checkpoint | None:

        def load(conn: sqlite3.Connection) -> Checkpoint | None:
            row = conn.execute(
                "SELECT scope, version, fence, data FROM prism_ws_checkpoints WHERE key = ?",
                (key,),
            ).fetchone()
            if row is None:
                return None
            if row[0] != scope.encode():
                raise ownership_error("checkpoint", key, scope)
            return Checkpoint(key, scope, int(row[1]), int(row[2]), json.loads(row[3]))

        return await self._run(load)

    async def _save(
        self, key: str, data: Mapping[str, Any], version: int, lease: Lease
    ) -> Checkpoint:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        encoded = lease.scope.encode()

        def save(conn: sqlite3.Connection) -> Checkpoint:
            self._check_current(conn, lease, self._clock())
            row = conn.execute(
                "SELECT scope, version, fence FROM prism_ws_checkpoints WHERE key = ?", (key,)
            ).fetchone()
            if row is not None and row[0] != encoded:
                raise ownership_error("checkpoint", key, lease.scope)
            stored_version, stored_fence = (0, 0) if row is None else (int(row[1]), int(row[2]))
            if stored_version != version or stored_fence > lease.token:
                raise stale_error(key, version, stored_version, lease.token, stored_fence)
            conn.execute(
                "INSERT INTO prism_ws_checkpoints (key, scope, version, fence, data) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET version = excluded.version, "
                "fence = excluded.fence, data = excluded.data",
                (key, encoded, version + 1, lease.token, text),
            )
            return Checkpoint(key, lease.scope, version + 1, lease.token, json.loads(text))

        return await self._run(save)

    async def _list(self, scope: OwnershipScope, prefix: str) -> list[Checkpoint]:

        def select(conn: sqlite3.Connection) -> list[Checkpoint]:
            rows = conn.execute(
                "SELECT key, version, fence, data FROM prism_ws_checkpoints "
                "WHERE scope = ? ORDER BY key",
                (scope.encode(),),
            ).fetchall()
            return [
                Checkpoint(r[0], scope, int(r[1]), int(r[2]), json.loads(r[3]))
                for r in rows
                if r[0].startswith(prefix)
            ]

        return await self._run(select)

    async def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
