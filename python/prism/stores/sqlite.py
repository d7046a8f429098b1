"""SQLite session store (stdlib ``sqlite3``): the embedded default for hosts
with many sessions or several writer processes.

Each entry is one row holding the entry's compact JSON text, byte-identical
to the line the JSONL store would write, so exporting a session to JSONL is a
``SELECT``. Order is an AUTOINCREMENT ``seq``; ``id`` is UNIQUE, so the
database itself refuses duplicates, including ones from other processes.

Blocking I/O: every call runs in a worker thread (``anyio.to_thread``),
because a write can wait up to ``busy_timeout`` for another process's
transaction. One connection per store, guarded by a lock, so calls from many
tasks are serialized on it instead of each opening a connection.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from prism.contracts import SessionEntry, SessionEntryParseError
from prism.errors import DuplicateEntryError, StoreError
from prism.stores._codec import encode_batch
from prism.stores._locking import (
    describe_mode,
    lease_directory,
    make_parent_directory,
    os_reason,
    try_lock_session,
    unlock_session,
)
from prism.stores._rows import ROW_COLUMNS, Row, decode_rows, decode_text
from prism.stores.base import LocalClaims, SessionLease, check_key, check_path, check_session_id

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS prism_entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS prism_entries_session ON prism_entries (session_id, seq);
"""


class SqliteSessionStore:
    """A ``SessionStore`` over one SQLite database file (WAL mode).

    ``fsync=False`` uses ``synchronous=NORMAL``: a committed append survives
    a process crash but the last transactions may be lost on power loss.
    ``fsync=True`` uses ``synchronous=FULL``. Call ``close()`` (or use the
    store as an async context manager) to release the connection.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create_directory: bool = True,
        fsync: bool = False,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self.path = check_path(path, "session database")
        self.create_directory = create_directory
        self.fsync = fsync
        if (
            not isinstance(busy_timeout_ms, int)
            or isinstance(busy_timeout_ms, bool)
            or busy_timeout_ms < 0
        ):
            raise StoreError("busy_timeout_ms must be >= 0 (an integer)")
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._errors: dict[int, SessionEntryParseError] = {}
        self._errors_lock = threading.Lock()  # parse_errors is read without the connection lock
        self._memory_claims = LocalClaims()  # for ":memory:", which no other process sees

    # --- SessionStore -----------------------------------------------------

    async def append(self, entry: SessionEntry) -> None:
        await self.append_many([entry])

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        await anyio.to_thread.run_sync(self._append_blocking, entries)

    def _append_blocking(self, entries: Sequence[SessionEntry]) -> None:
        # Encoded in the worker thread (a multi-MB entry must not stall the
        # loop), before taking the connection lock.
        lines, parsed = encode_batch(entries)
        if not lines:
            return
        rows = [
            (entry["id"], entry["sessionId"], line.decode("utf-8"))
            for entry, line in zip(parsed, lines, strict=True)
        ]
        self._locked(self._insert, rows)

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        check_key(session_id, "session id")

        def query(conn: sqlite3.Connection) -> builtins.list[SessionEntry]:
            rows = conn.execute(
                f"SELECT {ROW_COLUMNS} FROM prism_entries WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
            return [entry for _seq, entry in self._decode(rows)]

        return await self._run(query)

    async def get(self, entry_id: str) -> SessionEntry | None:
        check_key(entry_id, "entry id")

        def query(conn: sqlite3.Connection) -> SessionEntry | None:
            rows = conn.execute(
                f"SELECT {ROW_COLUMNS} FROM prism_entries WHERE id = ?", (entry_id,)
            ).fetchall()
            decoded = self._decode(rows)
            return decoded[0][1] if decoded else None

        return await self._run(query)

    async def list_sessions(self) -> builtins.list[str]:
        def query(conn: sqlite3.Connection) -> builtins.list[str]:
            rows = conn.execute(
                "SELECT session_id FROM prism_entries WHERE typeof(session_id) = 'text'"
                " GROUP BY session_id ORDER BY MIN(seq)"
            ).fetchall()
            # None: a session_id that is not valid UTF-8 (see decode_text).
            return [row[0] for row in rows if row[0]]

        return await self._run(query)

    async def last_entry_id(self, session_id: str) -> str | None:
        """The id ``list(session_id)[-1]`` would have, reading only the last
        rows (the ``(session_id, seq)`` index makes it a short range scan)."""
        check_key(session_id, "session id")

        def query(conn: sqlite3.Connection) -> str | None:
            tail = 8
            while True:
                rows = conn.execute(
                    f"SELECT {ROW_COLUMNS} FROM prism_entries WHERE session_id = ?"
                    " ORDER BY seq DESC LIMIT ?",
                    (session_id, tail),
                ).fetchall()
                good = self._decode(rows)  # newest first: the first good row is the last entry
                if good or len(rows) < tail:
                    return good[0][1]["id"] if good else None
                tail *= 8  # a run of quarantined rows at the end: look further back

        return await self._run(query)

    @property
    def parse_errors(self) -> builtins.list[SessionEntryParseError]:
        """Rows quarantined by reads so far, like the JSONL store's bad lines;
        ``line`` is the row's ``seq``. A row that later reads fine (repaired
        by hand) drops out."""
        with self._errors_lock:
            return [self._errors[seq] for seq in sorted(self._errors)]

    async def claim(self, session_id: str) -> SessionLease:
        """Lease ``session_id`` with an exclusive ``flock`` on its own lock
        file in ``<path>.leases/`` (not a row: a lock the OS drops when the
        holder dies needs no expiry). Held until ``release()`` or until this
        process dies; never waits for a writer's transaction."""
        check_session_id(session_id)
        if self.path == ":memory:":
            return self._memory_claims.claim(session_id)
        directory = lease_directory(self.path)
        if self.create_directory:
            make_parent_directory(
                self.path, f"cannot claim a session in session database {self.path}"
            )
        fd = try_lock_session(directory, session_id)
        return SessionLease(session_id, lambda: unlock_session(fd, directory, session_id))

    # --- lifecycle --------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    async def __aenter__(self) -> SqliteSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- internals --------------------------------------------------------

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(self._locked, fn, *args)

    def _locked(self, fn: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            try:
                return fn(self._connection(), *args)
            except sqlite3.Error as exc:
                raise StoreError(f"session database {self.path}: {exc}") from None
            except OSError as exc:
                raise StoreError(
                    f"session database {self.path}: {os_reason(exc, self.path)}"
                ) from None

    def _decode(self, rows: builtins.list[Row]) -> builtins.list[tuple[int, SessionEntry]]:
        good, errors = decode_rows(rows)
        with self._errors_lock:
            for seq, _entry in good:
                self._errors.pop(seq, None)
            for error in errors:
                self._errors[error["line"]] = error
        return good

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("session store is closed")
        if self._conn is None:
            if self.create_directory:
                parent = os.path.dirname(self.path)
                if parent:
                    os.makedirs(parent, exist_ok=True)
            self._refuse_non_regular()
            # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE) so
            # the write lock is taken up front instead of on first write.
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.text_factory = decode_text
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {'FULL' if self.fsync else 'NORMAL'}")
                conn.executescript(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _refuse_non_regular(self) -> None:
        """SQLite would open a FIFO and block forever reading it (and a
        device would be read as garbage): refuse anything but a regular file
        or a path that does not exist yet."""
        if self.path == ":memory:":
            return
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISREG(mode):
            raise StoreError(
                f"session database {self.path}: not a regular file (it is {describe_mode(mode)})"
            )

    def _insert(self, conn: sqlite3.Connection, rows: builtins.list[tuple[str, str, str]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO prism_entries (id, session_id, entry) VALUES (?, ?, ?)", rows
            )
        except sqlite3.IntegrityError:
            _rollback(conn)
            raise DuplicateEntryError(
                f"duplicate session entry id {_first_existing(conn, rows)!r}"
            ) from None
        except BaseException:
            _rollback(conn)
            raise
        conn.execute("COMMIT")


def _first_existing(conn: sqlite3.Connection, rows: builtins.list[tuple[str, str, str]]) -> str:
    for entry_id, _, _ in rows:
        if conn.execute("SELECT 1 FROM prism_entries WHERE id = ?", (entry_id,)).fetchone():
            return entry_id
    return rows[0][0]


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back (SQLITE_FULL, an I/O error): a
    # second ROLLBACK would fail and hide the original error.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def create_sqlite_session_store(
    path: str | os.PathLike[str],
    *,
    create_directory: bool = True,
    fsync: bool = False,
    busy_timeout_ms: int = 30_000,
) -> SqliteSessionStore:
    """A SQLite store over ``path`` (created on first use, WAL mode). Other
    processes may use the same file; a writer waits up to ``busy_timeout_ms``
    for another's transaction before failing with StoreError."""
    return SqliteSessionStore(
        path, create_directory=create_directory, fsync=fsync, busy_timeout_ms=busy_timeout_ms
    )
