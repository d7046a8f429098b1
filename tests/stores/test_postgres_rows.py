"""The PostgreSQL store follows the JSONL and SQLite stores' quarantine and
error rules, on a real server: rows edited by hand never inject, duplicate
or crash, bad keys are StoreErrors, a server error is not called a lost
connection, and a DSN pasted as the host never leaks its password."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from tests.pg_server import PgServer

from prism.errors import DuplicateEntryError, StoreError
from prism.stores.postgres import create_postgres_session_store
from prism.stores.postgres.errors import ConnInfo, is_connection_failure, operation_error
from prism.stores.postgres.schema import MIGRATIONS
from prism.stores.postgres.store import PostgresSessionStore

pytestmark = pytest.mark.anyio

CANARY = "canary-pw-5be21d"


def entry(entry_id: str, session: str = "s1", text: str = "hi") -> dict[str, Any]:
    return {
        "id": entry_id,
        "sessionId": session,
        "parentId": None,
        "kind": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }


def line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


@pytest.fixture
async def store(pg_dsn: str) -> AsyncIterator[PostgresSessionStore]:
    async with create_postgres_session_store(pg_dsn, connect_timeout=5) as s:
        await s.append(entry("e1"))  # type: ignore[arg-type]
        yield s


def insert_row(dsn: str, row_id: str, session: str, text: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO prism_entries (id, session_id, entry) VALUES (%s, %s, %s)",
            [row_id, session, text],
        )


async def test_a_row_holding_a_newline_is_quarantined_not_split(
    store: PostgresSessionStore, pg_dsn: str
) -> None:
    injected = line(entry("e2")) + "\n" + line(entry("evil"))
    insert_row(pg_dsn, "e2", "s1", injected)
    await store.append(entry("e3"))  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e3"]
    assert await store.get("evil") is None
    assert await store.get("e2") is None
    (error,) = store.parse_errors
    assert error["line"] == 2 and "line break" in error["reason"]


async def test_a_row_whose_json_id_disagrees_with_its_column_is_quarantined(
    store: PostgresSessionStore, pg_dsn: str
) -> None:
    insert_row(pg_dsn, "other-id", "s1", line(entry("e1", text="forged")))
    insert_row(pg_dsn, "e9", "s2", line(entry("e9", session="s1")))
    listed = await store.list("s1")
    assert [(e["id"], e["message"]["content"][0]["text"]) for e in listed] == [("e1", "hi")]  # type: ignore[typeddict-item]
    assert await store.list("s2") == []
    assert await store.get("other-id") is None
    assert await store.get("e9") is None
    reasons = sorted(e["reason"] for e in store.parse_errors)
    assert reasons == [
        "entry id does not match the row's id column",
        "entry sessionId does not match the row's session_id column",
    ]
    # Repairing the row by hand brings it back and clears its record.
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE prism_entries SET session_id = 's1' WHERE id = 'e9'")
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e9"]
    assert [e["reason"] for e in store.parse_errors] == [
        "entry id does not match the row's id column"
    ]


async def test_non_string_keys_are_store_errors(store: PostgresSessionStore) -> None:
    with pytest.raises(StoreError, match="session id must be a string, got int"):
        await store.list(123)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="entry id must be a string, got NoneType"):
        await store.get(None)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="'id' must be a non-empty string"):
        await store.append({**entry("x"), "id": 7})  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="session id must be a non-empty string"):
        await store.claim(["s1"])  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1"]


async def test_long_ids_are_stored_like_jsonl_and_sqlite(
    store: PostgresSessionStore, pg_dsn: str
) -> None:
    """3,001-character ids and session ids (past the ~2,700-byte btree row
    limit, which used to fail as "connection lost") store, read back and
    stay unique."""
    long_id = "x" + secrets.token_hex(1500)
    long_session = "s" + secrets.token_hex(1500)
    await store.append_many([entry("e2"), entry(long_id)])  # type: ignore[list-item]
    await store.append(entry("e3", session=long_session))  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2", long_id]
    assert [e["id"] for e in await store.list(long_session)] == ["e3"]
    got = await store.get(long_id)
    assert got is not None and got["id"] == long_id
    assert await store.list_sessions() == ["s1", long_session]
    with pytest.raises(DuplicateEntryError, match="duplicate session entry id 'x"):
        await store.append(entry(long_id, session="s9"))  # type: ignore[arg-type]
    assert await store.list("s9") == []


async def test_lookups_use_the_digest_indexes(store: PostgresSessionStore, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        for query, index in (
            (
                "SELECT entry FROM prism_entries WHERE md5(session_id) = md5('s1') "
                "AND session_id = 's1' ORDER BY seq",
                "prism_entries_session_md5",
            ),
            ("SELECT entry FROM prism_entries WHERE md5(id) = md5('e1') AND id = 'e1'", "id_md5"),
        ):
            plan = "\n".join(str(r[0]) for r in conn.execute(f"EXPLAIN {query}"))
            assert index in plan and "Sort" not in plan, plan


async def test_a_version_1_database_migrates_with_its_data(pg_dsn: str) -> None:
    async with PostgresSessionStore(dsn=pg_dsn, migrations=MIGRATIONS[:1]) as old:
        await old.append(entry("e1"))  # type: ignore[arg-type]
    async with create_postgres_session_store(pg_dsn) as new:
        long_id = "x" + secrets.token_hex(1500)
        await new.append(entry(long_id))  # type: ignore[arg-type]
        assert [e["id"] for e in await new.list("s1")] == ["e1", long_id]
        with pytest.raises(DuplicateEntryError):
            await new.append(entry("e1", session="s2"))  # type: ignore[arg-type]


def test_a_server_error_is_not_reported_as_a_lost_connection(pg_dsn: str) -> None:
    """A real error the server answers with (an index row over the btree
    limit, SQLSTATE 54000, an OperationalError in psycopg) is named as what
    it is, and is not treated as a connection failure whose outcome is
    unknown."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id text UNIQUE)")
        with pytest.raises(psycopg.OperationalError) as raised:
            conn.execute("INSERT INTO t VALUES (%s)", [secrets.token_hex(1500)])
    assert not is_connection_failure(raised.value)
    error = operation_error(ConnInfo(pg_dsn), raised.value, "append")
    assert "a PostgreSQL limit was exceeded (index row size" in str(error)
    assert "connection" not in str(error)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.OperationalError) as terminated:
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    assert is_connection_failure(terminated.value)


@pytest.mark.parametrize(
    "dsn",
    [
        "host=postgresql://prism:{pw}@127.0.0.1:{port}/postgres connect_timeout=2",
        "host='prism:{pw}@127.0.0.1' port={port} dbname=postgres",
        "host='host=127.0.0.1 password={pw}' port={port}",
    ],
)
async def test_a_dsn_pasted_as_the_host_never_leaks_its_password(
    pg_server: PgServer, dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    text = dsn.format(pw=CANARY, port=pg_server.port)
    with pytest.raises(StoreError, match="'host' holds a connection string or URL") as info:
        store = create_postgres_session_store(text, connect_timeout=1)
        try:
            await store.list("s1")
        finally:
            await store.aclose()
    assert CANARY not in str(info.value)
    assert CANARY not in caplog.text
