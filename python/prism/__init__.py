"""Prism: an agent harness with a Rust core for its hot paths.

The public API is re-exported here; each capability lives in its own module.
"""

from prism import contracts
from prism.errors import (
    ConfigError,
    DuplicateEntryError,
    PermissionDeniedError,
    PrismError,
    ProviderError,
    RunAbortedError,
    SessionBusyError,
    StoreError,
    UnknownNameError,
)
from prism.middleware import MiddlewareRegistry, create_middleware_registry
from prism.stores import (
    JsonlSessionStore,
    MemorySessionStore,
    SessionStore,
    SqliteSessionStore,
    create_jsonl_session_store,
    create_memory_session_store,
    create_sqlite_session_store,
    read_jsonl_session_entries,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DuplicateEntryError",
    "JsonlSessionStore",
    "MemorySessionStore",
    "MiddlewareRegistry",
    "PermissionDeniedError",
    "PrismError",
    "ProviderError",
    "RunAbortedError",
    "SessionBusyError",
    "SessionStore",
    "SqliteSessionStore",
    "StoreError",
    "UnknownNameError",
    "__version__",
    "contracts",
    "create_jsonl_session_store",
    "create_memory_session_store",
    "create_middleware_registry",
    "create_sqlite_session_store",
    "read_jsonl_session_entries",
]
