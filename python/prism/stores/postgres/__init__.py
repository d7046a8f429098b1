"""PostgreSQL session store (optional extra ``prism-harness[postgres]``).

``create_postgres_session_store(dsn=...)`` or ``(pool=...)`` gives a
``SessionStore`` on psycopg 3 (async) and psycopg-pool, plus cross-process,
cross-host session leases on advisory locks. ``import prism`` never imports
this package or psycopg; importing it without the extra raises an
``ImportError`` that names the extra. docs/stores.md describes the schema,
the guarantees and the failure behaviour.
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "prism.stores.postgres needs psycopg 3 and psycopg-pool: "
        "pip install 'prism-harness[postgres]'"
    ) from exc

from prism.stores.postgres.lease import PostgresSessionLease
from prism.stores.postgres.schema import SCHEMA_VERSION
from prism.stores.postgres.store import PostgresSessionStore, create_postgres_session_store

__all__ = [
    "SCHEMA_VERSION",
    "PostgresSessionLease",
    "PostgresSessionStore",
    "create_postgres_session_store",
]
