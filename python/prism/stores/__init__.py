"""Session stores: the protocol and its implementations."""

from prism.stores.base import SessionStore, validate_entry_for_append
from prism.stores.memory import MemorySessionStore, create_memory_session_store

__all__ = [
    "MemorySessionStore",
    "SessionStore",
    "create_memory_session_store",
    "validate_entry_for_append",
]
