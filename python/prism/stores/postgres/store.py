"""``PostgresSessionStore``: the ``SessionStore`` protocol on PostgreSQL.

Each entry is one row holding the entry's compact JSON text, byte-identical
to the JSONL line and the SQLite row, so reads return exactly what was
written. Order is an identity ``seq``; ``id`` is UNIQUE, so the database
refuses duplicates from any process or host.

An ``append_many`` is one transaction. Before inserting, it takes a
transaction-scoped advisory lock per session it touches (in a fixed order,
so two batches cannot deadlock): concurrent writers to one session then
commit one after the other, which makes ``seq`` order equal commit order
within a session. Without it a reader could see entry 11 committed before
entry 10, and 10 appear "in the past" later.

Connections come from a psycopg-pool ``AsyncConnectionPool``: the store's
own (``dsn=``; opened on first use, closed by ``aclose``) or the caller's
(``pool=``; never closed by the store). psycopg's async API runs on asyncio
only, so this store does too.
"""

from __future__ import annotations

import builtins
import hashlib
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import psycopg
from psycopg import AsyncConnection
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from prism.contracts import SessionEntry, SessionEntryParseError
from prism.errors import DuplicateEntryError, StoreError
from prism.stores._codec import encode_batch
from prism.stores._rows import decode_rows
from prism.stores.base import check_key, check_session_id
from prism.stores.postgres.connections import check_idle_connection
from prism.stores.postgres.errors import (
    ConnInfo,
    connect_error,
    first_existing,
    is_connection_failure,
    operation_error,
)
from prism.stores.postgres.lease import LeaseManager, PostgresSessionLease
from prism.stores.postgres.schema import MIGRATIONS, Migration, ensure_schema

# One statement per batch: take the per-session advisory locks (an InitPlan,
# so they are held before any row is produced), check that every lease this
# store holds on the batch's sessions is still locked on the server (a lock
# nobody holds can be taken: then the lease is lost and no row is inserted)
# and still carries the newest fencing token (a newer claim bumped it: the
# lease was taken over; the row is share-locked, so a claim waits for an
# append in flight and an append after a claim sees its token), then insert
# the rows in batch order (the identity ``seq`` is assigned in the sorted
# output order).
_APPEND_FENCED = """
WITH locks AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k
), unleased AS MATERIALIZED (
    SELECT count(*) AS n FROM unnest(%s::bigint[]) AS k
    WHERE pg_try_advisory_xact_lock_shared(k)
), fences AS MATERIALIZED (
    SELECT lease_key, token FROM prism_session_fences WHERE lease_key = ANY(%s::bigint[])
    FOR SHARE
), stale AS MATERIALIZED (
    SELECT count(*) AS n FROM unnest(%s::bigint[], %s::bigint[]) AS f(k, t)
    WHERE NOT EXISTS (SELECT 1 FROM fences WHERE lease_key = f.k AND token = f.t)
)
INSERT INTO prism_entries (id, session_id, entry)
SELECT t.id, t.session_id, t.entry
FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(id, session_id, entry, n)
WHERE (SELECT count(*) FROM locks) >= 0 AND (SELECT n FROM unleased) = 0
  AND (SELECT n FROM stale) = 0
ORDER BY t.n
"""
# A batch to sessions this store holds no lease on checks no lease.
_APPEND = """
WITH locks AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k
)
INSERT INTO prism_entries (id, session_id, entry)
SELECT t.id, t.session_id, t.entry
FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(id, session_id, entry, n)
WHERE (SELECT count(*) FROM locks) >= 0
ORDER BY t.n
"""
_ROWS = "SELECT seq, id, session_id, entry FROM prism_entries"
# Ids and session ids are indexed by their md5 digest (schema version 2), so
# lookups compare the digest (index) and then the text (exact).
_IDS_IN = "md5(id) = ANY(ARRAY(SELECT md5(x) FROM unnest(%s::text[]) AS x)) AND id = ANY(%s)"


def advisory_key(namespace: bytes, session_id: str) -> int:
    """A signed 64-bit advisory-lock key for ``session_id`` in ``namespace``.
    64 bits (not ``hashtext``'s 32) so two live sessions never share a key in
    practice."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8, person=namespace)
    return int.from_bytes(digest.digest(), "big", signed=True)


class PostgresSessionStore:
    """A ``SessionStore`` over one PostgreSQL database (see module docstring).

    Use ``create_postgres_session_store``. Call ``aclose()`` (or use the store
    as an async context manager) to release its connections and leases.
    """

    def __init__(
        self,
        *,
        dsn: str | None = None,
        pool: AsyncConnectionPool[Any] | None = None,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
        statement_timeout_ms: int | None = 30_000,
        migrations: Sequence[Migration] = MIGRATIONS,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise StoreError("create_postgres_session_store needs exactly one of dsn= or pool=")
        if connect_timeout <= 0:
            raise StoreError("connect_timeout must be > 0 seconds")
        if statement_timeout_ms is not None and statement_timeout_ms < 0:
            raise StoreError("statement_timeout_ms must be >= 0 (0 disables it)")
        if not 0 <= min_size <= max_size or max_size < 1:
            raise StoreError("pool sizes need 0 <= min_size <= max_size and max_size >= 1")
        self.connect_timeout = float(connect_timeout)
        self.statement_timeout_ms = statement_timeout_ms
        self._migrations = tuple(migrations)
        self._owns_pool = pool is None
        if pool is None:
            assert dsn is not None
            if not isinstance(dsn, str):
                raise StoreError("dsn must be a string")
            self._info = ConnInfo(dsn)
            self._pool_kwargs = self._connection_kwargs()
            self._pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                kwargs=self._connection_kwargs(),
                open=False,
                # A connection the server dropped while it sat in the pool
                # (restart, terminate) is replaced before a call uses it.
                check=check_idle_connection,
                name="prism-sessions",
            )
        else:
            if not isinstance(pool, AsyncConnectionPool):
                raise StoreError("pool must be a psycopg_pool.AsyncConnectionPool")
            # Newer psycopg-pool also takes callables here; then only the
            # pool itself knows where it connects.
            conninfo = pool.conninfo if isinstance(pool.conninfo, str) else ""
            self._pool_kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
            self._info = ConnInfo(conninfo, self._pool_kwargs)
            self._pool = pool
        self._opened = False
        self._schema_ready = False
        self._setup_lock = anyio.Lock()
        self._closed = False
        self._errors: dict[int, SessionEntryParseError] = {}
        self._leases = LeaseManager(self._info, self._pool, self.connect_timeout, self._diagnose)

    def __repr__(self) -> str:
        return f"<PostgresSessionStore {self._info.target}>"

    def _connection_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, math.ceil(self.connect_timeout)),
        }
        if self.statement_timeout_ms is not None:
            # Added to the DSN's own options (search_path, ...), not replacing them.
            own = str(self._info.params.get("options") or "")
            timeout = f"-c statement_timeout={int(self.statement_timeout_ms)}"
            kwargs["options"] = f"{own} {timeout}".strip()
        return kwargs

    # --- SessionStore -------------------------------------------------------

    async def append(self, entry: SessionEntry) -> None:
        await self.append_many([entry])

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        lines, parsed = encode_batch(entries)  # validation and in-batch duplicates first
        if not lines:
            return
        for entry in parsed:
            for field in ("id", "sessionId"):
                _check_storable(entry["id"], field, entry[field])
        rows = [
            (entry["id"], entry["sessionId"], line.decode("utf-8"))
            for entry, line in zip(parsed, lines, strict=True)
        ]
        sessions = sorted({row[1] for row in rows})
        keys = sorted({advisory_key(b"prism-append", session) for session in sessions})
        ids = [row[0] for row in rows]
        columns = [ids, [row[1] for row in rows], [row[2] for row in rows]]
        async with self._connection("append") as conn:
            # Refused here when a lease of ours is known lost; the statement
            # checks the rest on the server.
            fenced = self._leases.fence(sessions)
            lease_keys = [key for key, _token in fenced]
            tokens = [token for _key, token in fenced]
            params: builtins.list[builtins.list[Any]]
            if fenced:
                sql, params = _APPEND_FENCED, [keys, lease_keys, lease_keys, lease_keys, tokens]
            else:
                sql, params = _APPEND, [keys]
            params.extend(columns)
            try:
                if conn.autocommit:
                    # One statement is one transaction: one round trip.
                    cur = await conn.execute(sql, params)
                else:
                    async with conn.transaction():
                        cur = await conn.execute(sql, params)
                inserted = cur.rowcount
            except pg_errors.UniqueViolation:
                # Rolled back; name the first id of the batch that exists.
                raise await self._duplicate_error(conn, ids) from None
            except (psycopg.Error, OSError) as exc:
                written = "nothing was written (the batch rolled back)"
                if is_connection_failure(exc):
                    landed = await self._landed(ids)
                    if landed:
                        # The connection dropped after the server committed:
                        # the batch is stored whole, so this append succeeded.
                        return
                    if landed is None:
                        written = (
                            "the store could not check whether the batch was committed; it "
                            "landed whole or not at all, and retrying it is safe (a batch "
                            "that landed is refused as a duplicate)"
                        )
                raise operation_error(self._info, exc, "append", written=written) from None
        if inserted != len(rows):
            # The server found a lease lock nobody holds, or a newer fencing
            # token: the lease is lost.
            await self._leases.mark_lost(fenced)
            self._leases.fence(sessions)  # raises for the lost lease
            raise StoreError(
                f"PostgreSQL session store: append on {self._info.target} was refused: a "
                "session lease was not held on the server; nothing was written"
            )

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        if "\x00" in check_key(session_id, "session id"):
            return []  # no stored session id can hold NUL (see append_many)
        rows = await self._fetch(
            "list",
            f"{_ROWS} WHERE md5(session_id) = md5(%s) AND session_id = %s ORDER BY seq",
            [session_id, session_id],
        )
        return [entry for _seq, entry in self._decode(rows)]

    async def get(self, entry_id: str) -> SessionEntry | None:
        if "\x00" in check_key(entry_id, "entry id"):
            return None
        rows = await self._fetch(
            "get", f"{_ROWS} WHERE md5(id) = md5(%s) AND id = %s", [entry_id, entry_id]
        )
        decoded = self._decode(rows)
        return decoded[0][1] if decoded else None

    @property
    def parse_errors(self) -> builtins.list[SessionEntryParseError]:
        """Rows quarantined by reads so far, like the JSONL store's bad lines;
        ``line`` is the row's ``seq``. A row that later reads fine (repaired
        by hand) drops out."""
        return [self._errors[seq] for seq in sorted(self._errors)]

    def _decode(self, rows: builtins.list[Any]) -> builtins.list[tuple[int, SessionEntry]]:
        """Rows back to entries through the native parser (one call per
        query); a row that is not exactly one entry matching its own id and
        session_id columns is quarantined, as in the SQLite store."""
        good, errors = decode_rows(
            [
                (int(seq), row_id, session, "text", _utf8(text))
                for seq, row_id, session, text in rows
            ]
        )
        for seq, _entry in good:
            self._errors.pop(seq, None)
        for error in errors:
            self._errors[error["line"]] = error
        return good

    async def list_sessions(self) -> builtins.list[str]:
        rows = await self._fetch(
            "list_sessions",
            "SELECT session_id FROM prism_entries GROUP BY session_id ORDER BY min(seq)",
            [],
        )
        return [str(r[0]) for r in rows]

    # --- leases -------------------------------------------------------------

    async def claim(self, session_id: str) -> PostgresSessionLease:
        """Claim ``session_id`` for one run, across processes and hosts.

        Raises ``SessionBusyError`` at once when any holder (this store,
        another store, another process or host on the same database) has it.
        Release with ``await lease.release()`` or ``async with``; a holder
        that dies (even SIGKILLed) loses the lease when the server notices
        its connection closed.
        """
        check_session_id(session_id)
        if self._closed:
            raise StoreError("session store is closed")
        await self._setup()
        return await self._leases.claim(session_id)

    # --- lifecycle ----------------------------------------------------------

    async def aclose(self) -> None:
        """Release leases and, for a store that made its pool, close it."""
        if self._closed:
            return
        self._closed = True
        await self._leases.close()
        if self._owns_pool and self._opened:
            await self._pool.close()

    async def __aenter__(self) -> PostgresSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- internals ----------------------------------------------------------

    async def _fetch(self, action: str, query: str, params: builtins.list[Any]) -> Any:
        async with self._connection(action) as conn:
            try:
                cur = await conn.execute(query.encode(), params)
                return await cur.fetchall()
            except (psycopg.Error, OSError) as exc:
                raise operation_error(self._info, exc, action, written="nothing changed") from None

    @asynccontextmanager
    async def _connection(self, action: str) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection on a migrated database, or a StoreError."""
        if self._closed:
            raise StoreError("session store is closed")
        await self._setup()
        started = time.monotonic()
        try:
            async with self._pool.connection(timeout=self.connect_timeout) as conn:
                yield conn
        except PoolTimeout:
            raise await self._diagnose(time.monotonic() - started) from None
        except PoolClosed:
            raise _pool_closed() from None

    async def _setup(self) -> None:
        if self._schema_ready:
            return
        async with self._setup_lock:
            if self._schema_ready:
                return
            if self._owns_pool and not self._opened:
                await self._pool.open(wait=False)
                self._opened = True
            started = time.monotonic()
            try:
                async with self._pool.connection(timeout=self.connect_timeout) as conn:
                    await ensure_schema(conn, self._migrations)
            except PoolTimeout:
                raise await self._diagnose(time.monotonic() - started) from None
            except PoolClosed:
                raise _pool_closed() from None
            except StoreError:
                raise
            except (psycopg.Error, OSError) as exc:
                raise operation_error(
                    self._info, exc, "schema setup", written="the schema is unchanged"
                ) from None
            self._schema_ready = True

    async def _diagnose(self, waited: float) -> StoreError:
        """The pool only says it timed out; one direct connection attempt
        says why (refused, bad password, ...)."""
        cause: BaseException | None = None
        if not self._info.dsn:  # a pool with a callable conninfo: cannot retry it here
            return connect_error(self._info, None, round(waited, 1))
        try:
            conn = await AsyncConnection.connect(
                self._info.dsn, **{**self._pool_kwargs, "connect_timeout": 2}
            )
        except (psycopg.Error, OSError) as exc:
            cause = exc
        else:
            await conn.close()
        return connect_error(self._info, cause, round(waited, 1))

    async def _duplicate_error(
        self, conn: AsyncConnection[Any], batch_ids: builtins.list[str]
    ) -> DuplicateEntryError:
        try:
            cur = await conn.execute(
                f"SELECT id FROM prism_entries WHERE {_IDS_IN}", [batch_ids] * 2
            )
            existing = {str(r[0]) for r in await cur.fetchall()}
        except psycopg.Error:
            existing = set()
        found = first_existing(batch_ids, existing) or batch_ids[0]
        return DuplicateEntryError(f"duplicate session entry id {found!r}")

    async def _landed(self, batch_ids: builtins.list[str]) -> bool | None:
        """Whether a batch whose COMMIT outcome is unknown is in the store
        (None: the server cannot be asked right now)."""
        try:
            async with self._pool.connection(timeout=self.connect_timeout) as conn:
                cur = await conn.execute(
                    f"SELECT count(*) FROM prism_entries WHERE {_IDS_IN}", [batch_ids] * 2
                )
                row = await cur.fetchone()
        except (psycopg.Error, OSError, PoolTimeout):
            return None
        return bool(row) and int(row[0]) == len(batch_ids)


def _pool_closed() -> StoreError:
    return StoreError(
        "the connection pool given to the PostgreSQL session store is not open "
        "(open it first, e.g. `async with pool:`, or pass dsn= to let the store manage one)"
    )


def _utf8(text: object) -> object:
    # A str column comes back as str; anything else (never written by the
    # store) goes to decode_rows as is and is quarantined there.
    return text.encode("utf-8") if isinstance(text, str) else text


def _excerpt(entry_id: str) -> str:
    return repr(entry_id) if len(entry_id) <= 64 else repr(entry_id[:64]) + "..."


def _check_storable(entry_id: str, field: str, value: str) -> None:
    if "\x00" in value:
        raise StoreError(
            f"session entry {_excerpt(entry_id)}: field {field!r} contains a NUL "
            "character, which PostgreSQL text cannot hold"
        )


def create_postgres_session_store(
    dsn: str | None = None,
    *,
    pool: AsyncConnectionPool[Any] | None = None,
    min_size: int = 1,
    max_size: int = 8,
    connect_timeout: float = 10.0,
    statement_timeout_ms: int | None = 30_000,
) -> PostgresSessionStore:
    """A PostgreSQL store on ``dsn`` (libpq ``key=value`` string or
    ``postgresql://`` URL; the store makes and owns a pool of ``min_size`` to
    ``max_size`` connections) or on a caller's ``pool`` (the caller opens and
    closes it; ``min_size``/``max_size``/``statement_timeout_ms`` then don't
    apply: configure them on the pool or the role).

    The schema is created or migrated on first use. A call waits up to
    ``connect_timeout`` seconds for a connection, then fails with
    ``StoreError`` saying why (refused, authentication, ...).
    ``statement_timeout_ms`` bounds every statement server-side (``None``
    keeps the server's setting).
    """
    return PostgresSessionStore(
        dsn=dsn,
        pool=pool,
        min_size=min_size,
        max_size=max_size,
        connect_timeout=connect_timeout,
        statement_timeout_ms=statement_timeout_ms,
    )
