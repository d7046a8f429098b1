"""In-memory session store: for tests and throwaway sessions."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from prism.contracts import SessionEntry
from prism.errors import DuplicateEntryError
from prism.stores._codec import encode_batch
from prism.stores.base import LocalClaims, SessionLease, check_key


class MemorySessionStore:
    """Holds copies (parsed back from the entry's JSON line, exactly what a
    persistent store would return), so a caller mutating its dict later
    cannot rewrite history. Validation is the same as the JSONL and SQLite
    stores': an entry any store accepts, every store accepts."""

    def __init__(self) -> None:
        self._by_id: dict[str, SessionEntry] = {}
        self._by_session: dict[str, list[SessionEntry]] = {}
        self._claims = LocalClaims()

    async def append(self, entry: SessionEntry) -> None:
        await self.append_many([entry])

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        _lines, batch = encode_batch(entries)  # refuses bad shapes and in-batch duplicates
        for entry in batch:
            entry_id = entry["id"]
            if entry_id in self._by_id:
                raise DuplicateEntryError(f"duplicate session entry id {entry_id!r}")
        for entry in batch:
            self._by_id[entry["id"]] = entry
            self._by_session.setdefault(entry["sessionId"], []).append(entry)

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        check_key(session_id, "session id")
        return list(self._by_session.get(session_id, ()))

    async def get(self, entry_id: str) -> SessionEntry | None:
        check_key(entry_id, "entry id")
        return self._by_id.get(entry_id)

    async def list_sessions(self) -> builtins.list[str]:
        return list(self._by_session)

    async def last_entry_id(self, session_id: str) -> str | None:
        check_key(session_id, "session id")
        entries = self._by_session.get(session_id)
        return entries[-1]["id"] if entries else None

    async def claim(self, session_id: str) -> SessionLease:
        """Leases are in-process, like the data: one run per session among
        everyone using this store object."""
        return self._claims.claim(session_id)


def create_memory_session_store() -> MemorySessionStore:
    return MemorySessionStore()
