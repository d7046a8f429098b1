"""The PostgreSQL store's schema and its migrations.

The schema is versioned: ``prism_schema_version`` holds one row per applied
migration. On first use a store takes a transaction-scoped advisory lock (so
workers starting together migrate once, one after the other), creates the
version table if needed and applies every migration newer than the
database's version, all in one transaction: a failed migration leaves the
database at its previous version. A database already at a newer version
than this code knows is refused with a clear error instead of being used
with a schema the code does not understand.

To change the schema later, append a ``Migration`` with the next version;
never edit an applied one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prism.errors import StoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "session entries: one row per entry holding its wire JSON text",
        (
            # ``entry`` is text, not jsonb: jsonb reorders keys and drops
            # duplicates, and reads must return the exact JSON written.
            """CREATE TABLE prism_entries (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id text NOT NULL UNIQUE,
                session_id text NOT NULL,
                entry text NOT NULL
            )""",
            "CREATE INDEX prism_entries_session ON prism_entries (session_id, seq)",
        ),
    ),
    Migration(
        2,
        "ids and session ids of any length: index their md5 digests, not the text",
        (
            # A btree index row holds at most ~2,700 bytes, so indexing the
            # text itself refused long ids the JSONL and SQLite stores take.
            # Two different ids with one digest (a crafted md5 collision) are
            # refused as duplicates: never stored over one another.
            "ALTER TABLE prism_entries DROP CONSTRAINT prism_entries_id_key",
            "CREATE UNIQUE INDEX prism_entries_id_md5 ON prism_entries (md5(id))",
            "DROP INDEX prism_entries_session",
            "CREATE INDEX prism_entries_session_md5 ON prism_entries (md5(session_id), seq)",
        ),
    ),
    Migration(
        3,
        "session fencing tokens: every claim of a session bumps its token",
        (
            # Keyed by the lease's advisory-lock key (a 64-bit digest of the
            # session id), so ids of any length fit and lock and token agree.
            # An append checks its lease's token here, in its own statement:
            # a worker whose lease was taken over without it hearing (a
            # partition) finds a newer token and writes nothing.
            """CREATE TABLE prism_session_fences (
                lease_key bigint PRIMARY KEY,
                token bigint NOT NULL
            )""",
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version

# Advisory-lock key serializing migrations across processes (an arbitrary
# constant; "prism" in ASCII in the high bytes).
_MIGRATION_LOCK = 0x707269736D000001

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS prism_schema_version (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


async def ensure_schema(
    conn: AsyncConnection[object], migrations: Sequence[Migration] = MIGRATIONS
) -> int:
    """Bring the database to the newest version in ``migrations``; returns it."""
    latest = migrations[-1].version if migrations else 0
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
        await conn.execute(_VERSION_TABLE)
        cur = await conn.execute("SELECT coalesce(max(version), 0) FROM prism_schema_version")
        row = await cur.fetchone()
        current = int(row[0]) if row else 0  # type: ignore[index]
        if current > latest:
            raise StoreError(
                f"the session database has schema version {current}, newer than the "
                f"{latest} this version of prism knows; upgrade prism-harness"
            )
        for migration in migrations:
            if migration.version <= current:
                continue
            for statement in migration.statements:
                await conn.execute(statement.encode())
            await conn.execute(
                "INSERT INTO prism_schema_version (version, description) VALUES (%s, %s)",
                [migration.version, migration.description],
            )
    return latest
