"""Leases and checkpoints on PostgreSQL (extra ``postgres``), for a fleet.

Expiry uses the server's clock (``clock_timestamp()``), so hosts with skewed
clocks still agree on who holds a lease. Each call is one statement in
autocommit, so one round trip: acquire is an upsert that only takes an
expired row (bumping its token), renew an update guarded by token and
expiry, save a compare-and-set that share-locks the lease row in the same
statement, so a takeover waits for a save in flight and a save after a
takeover finds the new token. Only a refusal costs a second round trip, to
say why. psycopg's async API runs on asyncio only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import psycopg
from psycopg import AsyncConnection

from prism.errors import StoreError
from prism.stores.postgres.errors import ConnInfo
from prism.workspaces.errors import WorkspaceStoreError
from prism.workspaces.fencing import (
    CheckedFencedStore,
    Checkpoint,
    Lease,
    lapsed_error,
    stale_error,
)
from prism.workspaces.scope import OwnershipScope, ownership_error

_NOW = "extract(epoch FROM clock_timestamp())"
_SCHEMA = (
    "SELECT pg_advisory_xact_lock(7223010937151201029)",  # one creator at a time
    """CREATE TABLE IF NOT EXISTS prism_ws_leases (
        key text PRIMARY KEY, scope text NOT NULL, owner text NOT NULL,
        token bigint NOT NULL, expires_at double precision NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS prism_ws_checkpoints (
        key text PRIMARY KEY, scope text NOT NULL, version bigint NOT NULL,
        fence bigint NOT NULL, data text NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS prism_ws_checkpoints_scope ON prism_ws_checkpoints (scope, key)",
)
_ACQUIRE = f"""
INSERT INTO prism_ws_leases AS l (key, scope, owner, token, expires_at)
VALUES (%(key)s, %(scope)s, %(owner)s, 1, {_NOW} + %(ttl)s::float8)
ON CONFLICT (key) DO UPDATE
SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
WHERE l.expires_at <= {_NOW} AND l.scope = excluded.scope
RETURNING token, expires_at
"""
_RENEW = f"""
UPDATE prism_ws_leases SET expires_at = {_NOW} + %(ttl)s::float8
WHERE key = %(key)s AND token = %(token)s AND scope = %(scope)s AND expires_at > {_NOW}
RETURNING expires_at
"""
_RELEASE = (
    "UPDATE prism_ws_leases SET expires_at = 0 "
    "WHERE key = %(key)s AND token = %(token)s AND scope = %(scope)s"
)
_LEASE_ROW = f"SELECT scope, token, expires_at > {_NOW} FROM prism_ws_leases WHERE key = %(key)s"
_CURRENT_LEASE = f"""
lease AS (
    SELECT 1 FROM prism_ws_leases
    WHERE key = %(key)s AND token = %(token)s AND scope = %(scope)s AND expires_at > {_NOW}
    FOR SHARE
)"""
_INSERT = f"""
WITH {_CURRENT_LEASE}
INSERT INTO prism_ws_checkpoints (key, scope, version, fence, data)
SELECT %(key)s, %(scope)s, 1, %(token)s, %(data)s FROM lease
ON CONFLICT (key) DO NOTHING
RETURNING version
"""
_UPDATE = f"""
WITH {_CURRENT_LEASE}
UPDATE prism_ws_checkpoints AS c
SET version = c.version + 1, fence = %(token)s, data = %(data)s
FROM lease
WHERE c.key = %(key)s AND c.version = %(version)s AND c.fence <= %(token)s
  AND c.scope = %(scope)s
RETURNING c.version
"""
_CHECKPOINT_ROW = "SELECT scope, version, fence, data FROM prism_ws_checkpoints WHERE key = %(key)s"
_LIST = (
    "SELECT key, version, fence, data FROM prism_ws_checkpoints "
    "WHERE scope = %(scope)s AND starts_with(key, %(prefix)s) ORDER BY key"
)


class PostgresFencedStore(CheckedFencedStore):
    """A ``LeaseStore`` and ``CheckpointStore`` over one PostgreSQL database
    (the tables ``prism_ws_leases`` and ``prism_ws_checkpoints``, created on
    first use in the connection's first schema). One connection, opened on
    first use and reopened if the server drops it."""

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0) -> None:
        try:
            self._info = ConnInfo(dsn)
        except StoreError as exc:
            raise WorkspaceStoreError(str(exc)) from None
        self._timeout = connect_timeout
        self._conn: AsyncConnection[Any] | None = None
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"<PostgresFencedStore {self._info.target}>"

    async def _connection(self) -> AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        conn = await psycopg.AsyncConnection.connect(
            self._info.dsn, autocommit=True, connect_timeout=max(2, int(self._timeout))
        )
        async with conn.transaction():
            for statement in _SCHEMA:
                await conn.execute(statement)
        self._conn = conn
        return conn

    async def _fetch(self, query: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """One statement, one round trip; errors say what failed without the DSN."""
        async with self._lock:
            try:
                with anyio.fail_after(self._timeout):
                    conn = await self._connection()
                    cur = await conn.execute(query, params)
                    return await cur.fetchall() if cur.description else []
            except (psycopg.Error, OSError, TimeoutError) as exc:
                reason = type(exc).__name__
                if isinstance(exc, psycopg.Error) and exc.sqlstate:
                    reason = f"{reason} (SQLSTATE {exc.sqlstate})"
                raise WorkspaceStoreError(
                    self._info.scrub(
                        f"workspace store on {self._info.target}: {reason}; if this was a write, "
                        "it was all or nothing (one statement)"
                    )
                ) from None

    # --- leases -----------------------------------------------------------------

    async def _acquire(
        self, key: str, scope: OwnershipScope, owner: str, seconds: float
    ) -> Lease | None:
        params = {"key": key, "scope": scope.encode(), "owner": owner, "ttl": seconds}
        rows = await self._fetch(_ACQUIRE, params)
        if rows:
            return Lease(key, scope, owner, int(rows[0][0]), float(rows[0][1]))
        found = await self._fetch(_LEASE_ROW, {"key": key})
        if found and found[0][0] != scope.encode():
            raise ownership_error("lease", key, scope)
        return None

    async def _renew(self, lease: Lease, seconds: float) -> Lease:
        params = {
            "key": lease.key,
            "token": lease.token,
            "scope": lease.scope.encode(),
            "ttl": seconds,
        }
        rows = await self._fetch(_RENEW, params)
        if not rows:
            raise await self._lapsed(lease)
        return Lease(lease.key, lease.scope, lease.owner, lease.token, float(rows[0][0]))

    async def release(self, lease: Lease) -> None:
        params = {"key": lease.key, "token": lease.token, "scope": lease.scope.encode()}
        await self._fetch(_RELEASE, params)

    async def _lapsed(self, lease: Lease) -> Exception:
        found = await self._fetch(_LEASE_ROW, {"key": lease.key})
        if found and found[0][0] != lease.scope.encode():
            return ownership_error("lease", lease.key, lease.scope)
        return lapsed_error(lease, int(found[0][1]) if found else None)

    # --- checkpoints ------------------------------------------------------------

    async def _load(self, key: str, scope: OwnershipScope) -> Checkpoint | None:
        rows = await self._fetch(_CHECKPOINT_ROW, {"key": key})
        if not rows:
            return None
        stored_scope, version, fence, data = rows[0]
        if stored_scope != scope.encode():
            raise ownership_error("checkpoint", key, scope)
        return Checkpoint(key, scope, int(version), int(fence), json.loads(data))

    async def _save(
        self, key: str, data: Mapping[str, Any], version: int, lease: Lease
    ) -> Checkpoint:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        params = {
            "key": key,
            "scope": lease.scope.encode(),
            "token": lease.token,
            "version": version,
            "data": text,
        }
        rows = await self._fetch(_INSERT if version == 0 else _UPDATE, params)
        if rows:
            return Checkpoint(key, lease.scope, int(rows[0][0]), lease.token, json.loads(text))
        raise await self._refused(key, version, lease)

    async def _refused(self, key: str, version: int, lease: Lease) -> Exception:
        """Why a save wrote nothing (a second round trip, on refusal only)."""
        found = await self._fetch(_LEASE_ROW, {"key": key})
        if found and found[0][0] != lease.scope.encode():
            return ownership_error("lease", key, lease.scope)
        if not found or int(found[0][1]) != lease.token or not found[0][2]:
            return lapsed_error(lease, int(found[0][1]) if found else None)
        rows = await self._fetch(_CHECKPOINT_ROW, {"key": key})
        if rows and rows[0][0] != lease.scope.encode():
            return ownership_error("checkpoint", key, lease.scope)
        stored_version, stored_fence = (int(rows[0][1]), int(rows[0][2])) if rows else (0, 0)
        return stale_error(key, version, stored_version, lease.token, stored_fence)

    async def _list(self, scope: OwnershipScope, prefix: str) -> list[Checkpoint]:
        rows = await self._fetch(_LIST, {"scope": scope.encode(), "prefix": prefix})
        return [Checkpoint(r[0], scope, int(r[1]), int(r[2]), json.loads(r[3])) for r in rows]

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await conn.close()
