"""Session stores: the protocol and its implementations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.stores.base import (
        LeasingSessionStore,
        SessionLease,
        SessionStore,
        claim_session,
        validate_entry_for_append,
    )
    from prism.stores.jsonl import (
        JsonlSessionStore,
        create_jsonl_session_store,
        read_jsonl_session_entries,
    )
    from prism.stores.memory import (
        MemorySessionStore,
        create_memory_session_store,
    )
    from prism.stores.sqlite import (
        SqliteSessionStore,
        create_sqlite_session_store,
    )

_EXPORTS: dict[str, str] = {
    "LeasingSessionStore": "prism.stores.base",
    "SessionLease": "prism.stores.base",
    "SessionStore": "prism.stores.base",
    "claim_session": "prism.stores.base",
    "validate_entry_for_append": "prism.stores.base",
    "JsonlSessionStore": "prism.stores.jsonl",
    "create_jsonl_session_store": "prism.stores.jsonl",
    "read_jsonl_session_entries": "prism.stores.jsonl",
    "MemorySessionStore": "prism.stores.memory",
    "create_memory_session_store": "prism.stores.memory",
    "SqliteSessionStore": "prism.stores.sqlite",
    "create_sqlite_session_store": "prism.stores.sqlite",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "JsonlSessionStore",
    "LeasingSessionStore",
    "MemorySessionStore",
    "SessionLease",
    "SessionStore",
    "SqliteSessionStore",
    "claim_session",
    "create_jsonl_session_store",
    "create_memory_session_store",
    "create_sqlite_session_store",
    "read_jsonl_session_entries",
    "validate_entry_for_append",
]
