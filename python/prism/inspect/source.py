"""Open a session store for reading: a JSONL file, a SQLite database or a
PostgreSQL URL, through the public store API only.

Opening checks what the path is before any store touches it, because the
stores create what is missing (a JSONL store's first append, a SQLite
store's table): a path that is not a session file is refused here, with
nothing written.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass
from typing import Any

from prism.contracts import SessionEntry
from prism.errors import PrismError, StoreError
from prism.stores import SessionStore, create_jsonl_session_store, create_sqlite_session_store

__all__ = ["InspectError", "SessionSource", "open_source"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_POSTGRES_SCHEMES = ("postgres://", "postgresql://")


class InspectError(PrismError):
    """The inspector cannot open or read what it was pointed at."""

    code = "inspect_error"


@dataclass
class SessionSource:
    """A store opened for reading, and what to call it on screen."""

    store: SessionStore
    label: str
    kind: str  # jsonl | sqlite | postgres

    def quarantined(self) -> list[dict[str, Any]]:
        """Lines or rows the store left out (``{line, reason, raw}``)."""
        errors = getattr(self.store, "parse_errors", None)
        return [dict(e) for e in errors] if errors is not None else []

    async def sessions(self) -> list[str]:
        sessions: list[str] = await _guard(self.store.list_sessions(), self.label)
        return sessions

    async def entries(self, session_id: str) -> list[SessionEntry]:
        entries: list[SessionEntry] = await _guard(self.store.list(session_id), self.label)
        return entries

    async def last_entry_id(self, session_id: str) -> str | None:
        last = getattr(self.store, "last_entry_id", None)
        if last is None:
            entries = await self.entries(session_id)
            return entries[-1]["id"] if entries else None
        result: str | None = await _guard(last(session_id), self.label)
        return result

    async def aclose(self) -> None:
        close = getattr(self.store, "aclose", None)
        if close is not None:
            await close()


async def _guard(awaitable: Any, label: str) -> Any:
    try:
        return await awaitable
    except StoreError as exc:
        raise InspectError(f"cannot read {label}: {exc}") from None


async def open_source(target: str, *, connect_timeout: float = 5.0) -> SessionSource:
    """Open ``target`` (a JSONL or SQLite path, or a ``postgresql://`` URL)
    and read its session list once, so a store that cannot be read fails
    here with :class:`InspectError` naming what is wrong."""
    if target.startswith(_POSTGRES_SCHEMES):
        source = _open_postgres(target, connect_timeout)
    else:
        source = _open_file(target)
    try:
        sessions = await source.sessions()
    except InspectError:
        await source.aclose()
        raise
    if source.kind == "jsonl" and not sessions and source.quarantined():
        await source.aclose()
        raise InspectError(
            f"{target} is not a session file: none of its lines is a session entry "
            f"(the first problem: line {source.quarantined()[0]['line']}, "
            f"{source.quarantined()[0]['reason']})"
        )
    return source


def _open_file(path: str) -> SessionSource:
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InspectError(f"cannot open {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InspectError(f"{path} is a directory, not a session file or database")
    if not stat.S_ISREG(info.st_mode):
        raise InspectError(f"{path} is not a regular file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise InspectError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head == _SQLITE_MAGIC:
        _check_sqlite(path)
        return SessionSource(
            create_sqlite_session_store(path, create_directory=False), path, "sqlite"
        )
    if info.st_size and not _looks_like_text(path):
        raise InspectError(f"{path} is not a session file: it is binary, not JSON lines")
    return SessionSource(create_jsonl_session_store(path, create_directory=False), path, "jsonl")


def _looks_like_text(path: str) -> bool:
    with open(path, "rb") as handle:
        sample = handle.read(4096)
    return b"\x00" not in sample


def _check_sqlite(path: str) -> None:
    """A read-only probe: the store itself would create its table in any
    SQLite file it is given."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='prism_entries'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise InspectError(f"cannot read {path} as a SQLite database: {exc}") from None
    if row is None:
        raise InspectError(
            f"{path} is a SQLite database without Prism sessions (no prism_entries table)"
        )


def _open_postgres(url: str, connect_timeout: float) -> SessionSource:
    try:
        from prism.stores.postgres import create_postgres_session_store
    except ImportError:
        raise InspectError(
            "reading a PostgreSQL store needs the postgres extra: "
            "pip install 'prism-harness[postgres]'"
        ) from None
    label = _safe_url(url)
    store = create_postgres_session_store(
        url, min_size=1, max_size=2, connect_timeout=connect_timeout
    )
    return SessionSource(store, label, "postgres")


def _safe_url(url: str) -> str:
    """The URL without its password, for messages and the page."""
    scheme, _, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at:
        return url.split("?", 1)[0]
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}@{host}".split("?", 1)[0]
