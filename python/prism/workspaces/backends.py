"""Pick the lease and checkpoint backend from what the host passed."""

from __future__ import annotations

import re
from collections.abc import Callable

from prism.workspaces.errors import WorkspaceConfigError
from prism.workspaces.fencing import FencedStore
from prism.workspaces.memory import MemoryFencedStore
from prism.workspaces.sqlite import SqliteFencedStore


def create_fenced_store(
    store: str | None = None, *, clock: Callable[[], float] | None = None
) -> FencedStore:
    """Leases and checkpoints on ``store``: None for memory (one process), a
    file path for SQLite, a ``postgres://``/``postgresql://`` URL or a
    ``key=value`` DSN for PostgreSQL (extra ``postgres``; it uses the
    server's clock, so ``clock`` is for memory and SQLite only)."""
    if store is None:
        return MemoryFencedStore(clock=clock)
    if not isinstance(store, str) or not store:
        raise WorkspaceConfigError("store must be None, a SQLite file path or a PostgreSQL DSN")
    if is_postgres_dsn(store):
        if clock is not None:
            raise WorkspaceConfigError("a PostgreSQL store uses the server's clock: pass no clock")
        raise WorkspaceConfigError("PostgreSQL workspace stores are not built yet")
    return SqliteFencedStore(store, clock=clock)


def is_postgres_dsn(store: str) -> bool:
    return store.startswith(("postgres://", "postgresql://")) or bool(
        re.match(r"^\s*(host|hostaddr|dbname|user|port|service)\s*=", store)
    )
