"""Session stores: the protocol and its implementations."""

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
from prism.stores.memory import MemorySessionStore, create_memory_session_store
from prism.stores.sqlite import SqliteSessionStore, create_sqlite_session_store

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
