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

A lease can still be lost while its holder runs: the lease connection is
terminated (``pg_terminate_backend``, a server restart, the network) or its
lock is gone. The manager notices without a round trip (the server's
goodbye and EOF on the idle connection's socket) and the store fences: an
append to a session whose lease is lost is refused with
``SessionLeaseLostError``, and the append statement itself checks on the
server that each lease lock is still held and still carries the newest
fencing token (every claim bumps the session's token in
``prism_session_fences``), so a lock that vanished without the client
noticing is caught too, even after another worker claimed the session. Claims and releases run their SQL
shielded from cancellation: a cancelled claim would otherwise make psycopg
close the connection and take every other lease with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import anyio.lowlevel
import psycopg
from psycopg import AsyncConnection
from psycopg.errors import Diagnostic
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from prism.errors import SessionLeaseLostError, StoreError
from prism.stores.base import SessionLease, busy_error, check_session_id
from prism.stores.postgres.connections import drain_idle_connection
from prism.stores.postgres.errors import ConnInfo, operation_error

_KEEPALIVE = (
    "SELECT set_config('tcp_keepalives_idle', '10', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false)"
)
# The lease connection is idle for as long as a run lasts: a server-wide
# idle_session_timeout (PostgreSQL 14+) would end it and take the leases.
_NO_IDLE_TIMEOUT = "SELECT set_config('idle_session_timeout', '0', false)"
_RESET_SETTINGS = (
    "SELECT set_config(name, reset_val, false) FROM pg_settings WHERE name IN "
    "('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', "
    "'idle_session_timeout')"
)
# Take the lock and, only if it was free, bump the session's fencing token:
# one statement, so a claim stays one round trip.
_CLAIM = """
WITH got AS MATERIALIZED (SELECT pg_try_advisory_lock(%(key)s) AS ok),
bumped AS (
    INSERT INTO prism_session_fences AS f (lease_key, token)
    SELECT %(key)s, 1 FROM got WHERE ok
    ON CONFLICT (lease_key) DO UPDATE SET token = f.token + 1
    RETURNING token
)
SELECT (SELECT ok FROM got), (SELECT token FROM bumped)
"""
_TOKENS = "SELECT lease_key, token FROM prism_session_fences WHERE lease_key = ANY(%s::bigint[])"
_HELD_KEYS = (
    "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks "
    "WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid = 1 AND granted"
)


def lease_key(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8, person=b"prism-lease")
    return int.from_bytes(digest.digest(), "big", signed=True)


def _unsigned(key: int) -> int:
    return key & 0xFFFF_FFFF_FFFF_FFFF


class PostgresSessionLease(SessionLease):
    """A ``SessionLease`` held as an advisory lock on the store's lease
    connection.

    ``lost`` is true once the store knows the lock no longer excludes other
    claimants (its connection died or the lock is gone); reading it checks
    the lease connection without a round trip. The store then refuses
    appends to the session until the lease is released.
    """

    __slots__ = ("_generation", "_key", "_lost_reason", "_manager", "_token")

    def __init__(
        self, manager: LeaseManager, session_id: str, key: int, generation: int, token: int
    ) -> None:
        super().__init__(session_id, lambda: manager.release(self))
        self._manager = manager
        self._key = key
        self._generation = generation
        self._token = token
        self._lost_reason: str | None = None

    @property
    def token(self) -> int:
        """The fencing token this claim got: higher than any earlier claim's
        on the session. Every append checks it is still the newest."""
        return self._token

    @property
    def lost(self) -> bool:
        """True once this held lease no longer excludes other claimants."""
        return self.held and self._manager.lost_reason(self) is not None

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
        self._dead: list[AsyncConnection[Any]] = []  # lost connections to hand back
        self._restore_autocommit = False
        self._held: dict[str, PostgresSessionLease] = {}
        self._lock = anyio.Lock()
        # Bumped whenever the lease connection is replaced or lost, so leases
        # taken on an older connection know they were lost.
        self.generation = 0
        self._loss = "the lease connection was closed"

    # --- loss detection (no round trip) ---------------------------------------

    def lost_reason(self, lease: PostgresSessionLease) -> str | None:
        """Why ``lease`` is lost, or None while it still holds."""
        self._poll()
        if lease._lost_reason is not None:
            return lease._lost_reason
        if lease._generation != self.generation:
            return self._loss
        return None

    def fence(self, session_ids: Iterable[str]) -> list[tuple[int, int]]:
        """Before an append: the lease keys and fencing tokens this store
        holds on ``session_ids`` (the append statement checks them on the
        server), or ``SessionLeaseLostError`` when one of those leases is lost."""
        keys: list[tuple[int, int]] = []
        for session_id in session_ids:
            lease = self._held.get(session_id)
            if lease is None:
                continue
            reason = self.lost_reason(lease)
            if reason is not None:
                raise self.lost_error(session_id, reason)
            keys.append((lease._key, lease._token))
        return keys

    def lost_error(self, session_id: str, reason: str) -> SessionLeaseLostError:
        return SessionLeaseLostError(
            self._info.scrub(
                f"PostgreSQL session store: the lease on session {session_id!r} was lost "
                f"({reason}); another worker may hold the session now, so the append was "
                "refused and nothing was written. End this run and claim the session again."
            )
        )

    def _poll(self) -> None:
        """Notice a lease connection the server has closed. Skipped while a
        claim or release is using it (reading here would steal its reply);
        that call sees the failure itself."""
        conn = self._conn
        if conn is None or self._lock.locked():
            return
        try:
            drain_idle_connection(conn)
        except psycopg.Error:
            self._lost_connection("the lease connection to the server was closed")

    def _on_notice(self, diag: Diagnostic) -> None:
        # The server says why it is about to close the connection
        # (terminated, idle timeout, shutdown) before the EOF arrives.
        if (diag.severity_nonlocalized or diag.severity) in ("FATAL", "PANIC"):
            cause = diag.message_primary or "the server closed the lease connection"
            self._lost_connection(f"the server ended the lease connection: {cause}")

    def _lost_connection(self, reason: str) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._dead.append(conn)
        self._restore_autocommit = False
        self._loss = reason
        self.generation += 1

    async def mark_lost(self, fenced: Iterable[tuple[int, int]]) -> None:
        """After the server refused an append because a lease lock was not
        held or a newer claim bumped its fencing token: find which of
        ``fenced`` (key, token) leases that applies to and mark them lost
        (all of them if the connection is gone)."""
        wanted = {key for key, _token in fenced}
        with anyio.CancelScope(shield=True):
            async with self._lock:
                held: set[int] | None = None
                tokens: dict[int, int] = {}
                if self._conn is not None:
                    try:
                        with anyio.fail_after(self._timeout):
                            cur = await self._conn.execute(_HELD_KEYS)
                            held = {_unsigned(int(r[0])) for r in await cur.fetchall()}
                            cur = await self._conn.execute(_TOKENS, [sorted(wanted)])
                            tokens = {int(r[0]): int(r[1]) for r in await cur.fetchall()}
                    except (psycopg.Error, OSError, TimeoutError):
                        self._lost_connection("the lease connection to the server was lost")
                for lease in self._held.values():
                    if lease._key not in wanted:
                        continue
                    newest = tokens.get(lease._key, lease._token)
                    if newest != lease._token:
                        lease._lost_reason = (
                            f"it was taken over: a newer claim holds fencing token {newest}, "
                            f"this lease has {lease._token}"
                        )
                    elif held is not None and _unsigned(lease._key) not in held:
                        lease._lost_reason = "its lock is no longer held on the server"

    # --- claim and release ------------------------------------------------------

    async def claim(self, session_id: str) -> PostgresSessionLease:
        check_session_id(session_id)
        async with self._lock:
            await self._hand_back_dead()
            current = self._held.get(session_id)
            if current is not None:
                if self.lost_reason(current) is not None:
                    raise busy_error(
                        session_id, "a holder in this process whose lease was lost (not yet ended)"
                    )
                raise busy_error(session_id)
            key = lease_key(session_id)
            conn = await self._connection()
            # Shielded: psycopg closes a connection whose query is cancelled
            # mid-flight, which would drop every other lease on it too.
            with anyio.CancelScope(shield=True):
                token = await self._try_lock(conn, key)
            if token is None:
                raise busy_error(session_id, "another process or host")
            lease = PostgresSessionLease(self, session_id, key, self.generation, token)
            self._held[session_id] = lease
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await lease.release()  # the caller was cancelled: it never gets the lease
            raise
        return lease

    async def _try_lock(self, conn: AsyncConnection[Any], key: int) -> int | None:
        """The new fencing token, or None when someone holds the lock."""
        try:
            with anyio.fail_after(self._timeout):
                cur = await conn.execute(_CLAIM, {"key": key})
                row = await cur.fetchone()
        except (psycopg.Error, OSError, TimeoutError) as exc:
            self._lost_connection("the lease connection to the server was lost")
            await self._hand_back_dead()
            raise operation_error(
                self._info, exc, "claim", written="the session was not claimed"
            ) from None
        if not (row and row[0]):
            return None
        return int(row[1])

    async def release(self, lease: PostgresSessionLease) -> None:
        with anyio.CancelScope(shield=True):
            async with self._lock:
                if self._held.get(lease.session_id) is not lease:
                    return  # the store was closed: every lock is already gone
                del self._held[lease.session_id]
                if (
                    lease._generation != self.generation
                    or lease._lost_reason is not None
                    or self._conn is None
                ):
                    await self._hand_back_dead()
                    return  # the lock went away with its connection
                try:
                    with anyio.fail_after(self._timeout):
                        await self._conn.execute("SELECT pg_advisory_unlock(%s)", [lease._key])
                except (psycopg.Error, OSError, TimeoutError):
                    # Connection gone: the server dropped the lock with it.
                    self._lost_connection("the lease connection to the server was lost")
                    await self._hand_back_dead()

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            async with self._lock:
                self._held.clear()  # their release() finds nothing left to do
                await self._drop()
                await self._hand_back_dead()

    # --- the lease connection ---------------------------------------------------

    async def _connection(self) -> AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            current = self._conn
            try:
                drain_idle_connection(current)
            except psycopg.Error:
                self._lost_connection("the lease connection to the server was closed")
            if self._conn is current:  # still alive (a FATAL notice also drops it)
                return current
        await self._hand_back_dead()
        try:
            # Taken out of the pool for as long as the store lives: a
            # session-level advisory lock lives on one server session.
            conn: AsyncConnection[Any] = await self._pool.getconn(timeout=self._timeout)
        except PoolTimeout:
            raise await self._diagnose(self._timeout) from None
        except PoolClosed:
            raise StoreError("the PostgreSQL session store's connection pool is closed") from None
        with anyio.CancelScope(shield=True):
            await self._prepare(conn)
        self._conn = conn
        self.generation += 1
        return conn

    async def _prepare(self, conn: AsyncConnection[Any]) -> None:
        try:
            with anyio.fail_after(self._timeout):
                if not conn.autocommit:
                    await conn.set_autocommit(True)
                    self._restore_autocommit = True
                await conn.execute(_KEEPALIVE)
                if conn.info.server_version >= 140000:
                    await conn.execute(_NO_IDLE_TIMEOUT)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            await self._pool.putconn(conn)
            raise operation_error(
                self._info, exc, "claim", written="the session was not claimed"
            ) from None
        conn.add_notice_handler(self._on_notice)

    async def _hand_back_dead(self) -> None:
        dead, self._dead = self._dead, []
        for conn in dead:
            conn.remove_notice_handler(self._on_notice)
            if not conn.closed:
                await conn.close()  # its locks must never reach another pool user
            await self._pool.putconn(conn)

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.remove_notice_handler(self._on_notice)
        if not conn.closed and not conn.broken:
            try:
                # Unlocking all is part of handing the connection back: the
                # pool must not give a connection holding leases to a caller.
                with anyio.fail_after(self._timeout):
                    await conn.execute("SELECT pg_advisory_unlock_all()")
                    await conn.execute(_RESET_SETTINGS)  # a user's pool gets it back as it was
                    if self._restore_autocommit:
                        await conn.set_autocommit(False)
            except (psycopg.Error, OSError, TimeoutError):
                await conn.close()
        self._restore_autocommit = False
        await self._pool.putconn(conn)
        self.generation += 1
