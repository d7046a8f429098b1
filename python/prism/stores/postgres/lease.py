"""Session leases on PostgreSQL advisory locks.

A lease is a session-level advisory lock (``pg_try_advisory_lock``) on a
64-bit key derived from the session id, held on one dedicated connection
per store. Why advisory locks rather than a lease row with an expiry:

- a holder that dies (crash, SIGKILL, OOM) loses its leases the moment the
  server sees its connection close: nothing to wait out, no clocks, no
  heartbeat task that could stall and let a lease expire under a live run;
- a host that vanishes without closing its sockets is detected by TCP
  keepalives, set on the lease connection so its leases are reclaimed within
  about ``idle + interval * count`` seconds (10 + 5 * 3 by default).

Advisory locks are re-entrant within one server session, so the store also
keeps the set of sessions it holds: a second claim through the same store
is refused in process, before asking the server.

If the lease connection itself is lost (server restart, network), every
lease it held is gone server-side; those leases are marked ``lost`` and the
next claim opens a new connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from prism.errors import StoreError
from prism.stores.base import SessionLease, busy_error, check_session_id
from prism.stores.postgres.connections import check_idle_connection
from prism.stores.postgres.errors import ConnInfo, operation_error

_KEEPALIVE = (
    "SELECT set_config('tcp_keepalives_idle', '10', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false)"
)


def lease_key(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8, person=b"prism-lease")
    return int.from_bytes(digest.digest(), "big", signed=True)


class PostgresSessionLease(SessionLease):
    """A ``SessionLease`` held as an advisory lock on the store's lease
    connection; ``lost`` says whether that connection has since been lost."""

    __slots__ = ("_generation", "_key", "_manager")

    def __init__(self, manager: LeaseManager, session_id: str, key: int, generation: int) -> None:
        super().__init__(session_id, lambda: manager.release(self))
        self._manager = manager
        self._key = key
        self._generation = generation

    @property
    def lost(self) -> bool:
        """True once the connection that held this lease is gone: the server
        no longer excludes other claimants for this holder."""
        return self.held and self._generation != self._manager.generation

    def __repr__(self) -> str:
        state = "lost" if self.lost else "held" if self.held else "released"
        return f"<PostgresSessionLease {self.session_id!r} {state}>"


class LeaseManager:
    """Holds one store's leases on one connection taken from its pool."""

    def __init__(
        self,
        info: ConnInfo,
        pool: AsyncConnectionPool[Any],
        timeout: float,
        diagnose: Callable[[float], Awaitable[StoreError]],
    ) -> None:
        self._info = info
        self._pool = pool
        self._timeout = timeout
        self._diagnose = diagnose
        self._conn: AsyncConnection[Any] | None = None
        self._restore_autocommit = False
        self._held: dict[str, PostgresSessionLease] = {}
        self._lock = anyio.Lock()
        # Bumped whenever the lease connection is replaced, so leases taken
        # on an older connection know they were lost.
        self.generation = 0

    async def claim(self, session_id: str) -> PostgresSessionLease:
        check_session_id(session_id)
        async with self._lock:
            if self._conn is not None:
                try:
                    await check_idle_connection(self._conn)
                except psycopg.Error:
                    await self._drop()  # its leases are lost; claim afresh below
            if session_id in self._held and not self._held[session_id].lost:
                raise busy_error(session_id)
            key = lease_key(session_id)
            conn = await self._connection()
            try:
                cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", [key])
                row = await cur.fetchone()
            except (psycopg.Error, OSError) as exc:
                await self._drop()
                raise operation_error(
                    self._info, exc, "claim", written="the session was not claimed"
                ) from None
            if not (row and row[0]):
                raise busy_error(session_id, "another process or host")
            lease = PostgresSessionLease(self, session_id, key, self.generation)
            self._held[session_id] = lease
            return lease

    async def release(self, lease: PostgresSessionLease) -> None:
        async with self._lock:
            if self._held.get(lease.session_id) is not lease:
                return  # the store was closed: every lock is already gone
            del self._held[lease.session_id]
            if lease._generation != self.generation or self._conn is None:
                return  # the lock went away with its connection
            try:
                await self._conn.execute("SELECT pg_advisory_unlock(%s)", [lease._key])
            except (psycopg.Error, OSError):
                # Connection gone: the server dropped the lock with it.
                await self._drop()

    async def close(self) -> None:
        async with self._lock:
            self._held.clear()  # their release() finds nothing left to do
            await self._drop()

    async def _connection(self) -> AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if self._conn is not None:
            await self._drop()
        try:
            # Taken out of the pool for as long as the store lives: a
            # session-level advisory lock lives on one server session.
            conn: AsyncConnection[Any] = await self._pool.getconn(timeout=self._timeout)
        except PoolTimeout:
            raise await self._diagnose(self._timeout) from None
        except PoolClosed:
            raise StoreError("the PostgreSQL session store's connection pool is closed") from None
        try:
            if not conn.autocommit:
                await conn.set_autocommit(True)
                self._restore_autocommit = True
            await conn.execute(_KEEPALIVE)
        except (psycopg.Error, OSError) as exc:
            await self._pool.putconn(conn)
            raise operation_error(
                self._info, exc, "claim", written="the session was not claimed"
            ) from None
        self._conn = conn
        self.generation += 1
        return conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if not conn.closed and not conn.broken:
            try:
                # Unlocking all is part of handing the connection back: the
                # pool must not give a connection holding leases to a caller.
                await conn.execute("SELECT pg_advisory_unlock_all()")
                if self._restore_autocommit:
                    await conn.set_autocommit(False)
            except (psycopg.Error, OSError):
                await conn.close()
        self._restore_autocommit = False
        await self._pool.putconn(conn)
        self.generation += 1
