"""SQLite specifics: bad paths, a locked database, closing, schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from prism.errors import StoreError
from prism.stores import create_jsonl_session_store, create_sqlite_session_store

pytestmark = pytest.mark.anyio


def summary(i: int) -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": "s1",
        "parentId": None,
        "kind": "summary",
        "summary": f"s{i}",
    }


async def test_path_is_a_directory(tmp_path: Path) -> None:
    store = create_sqlite_session_store(tmp_path)
    with pytest.raises(StoreError, match=r": not a regular file \(it is a directory\)"):
        await store.list("s1")


async def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    store = create_sqlite_session_store(path)
    with pytest.raises(StoreError, match="not a database"):
        await store.append(summary(1))  # type: ignore[arg-type]
    assert path.read_bytes() == b"this is not sqlite" * 100


async def test_locked_database_times_out_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with create_sqlite_session_store(path) as store:
        await store.append(summary(1))  # type: ignore[arg-type]
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        async with create_sqlite_session_store(path, busy_timeout_ms=0) as store:
            with pytest.raises(StoreError, match="database is locked"):
                await store.append(summary(2))  # type: ignore[arg-type]
            assert [e["id"] for e in await store.list("s1")] == ["e1"]  # readers are not blocked
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with create_sqlite_session_store(path) as store:
        await store.append(summary(2))  # type: ignore[arg-type]
        assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]


async def test_invalid_options_and_closed_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="busy_timeout_ms must be >= 0"):
        create_sqlite_session_store(tmp_path / "s.db", busy_timeout_ms=-1)
    store = create_sqlite_session_store(tmp_path / "s.db")
    await store.append(summary(1))  # type: ignore[arg-type]
    await store.aclose()
    with pytest.raises(StoreError, match="session store is closed"):
        await store.list("s1")


async def test_wal_mode_and_fsync_setting(tmp_path: Path) -> None:
    async with create_sqlite_session_store(tmp_path / "s.db", fsync=True) as store:
        await store.append(summary(1))  # type: ignore[arg-type]
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


async def test_hand_edited_bad_row_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with create_sqlite_session_store(path) as store:
        await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    conn = sqlite3.connect(path)
    conn.execute("UPDATE prism_entries SET entry = 'not json' WHERE id = 'e1'")
    conn.commit()
    conn.close()
    async with create_sqlite_session_store(path) as store:
        assert [e["id"] for e in await store.list("s1")] == ["e2"]
        assert await store.get("e1") is None


async def test_jsonl_path_is_a_directory(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path)
    with pytest.raises(StoreError, match="cannot read session file"):
        await store.list("s1")
    with pytest.raises(StoreError, match="cannot append to session file"):
        await store.append(summary(1))  # type: ignore[arg-type]


async def test_hand_edited_row_cannot_impersonate_another_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with create_sqlite_session_store(path) as store:
        await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    other = '{"id":"zz","sessionId":"other","parentId":null,"kind":"summary","summary":"x"}'
    conn = sqlite3.connect(path)
    conn.execute("UPDATE prism_entries SET entry = ? WHERE id = 'e1'", (other,))
    conn.execute(
        "UPDATE prism_entries SET entry = entry || char(10) || ? WHERE id = 'e2'", (other,)
    )
    conn.commit()
    conn.close()
    async with create_sqlite_session_store(path) as store:
        assert await store.get("e1") is None
        assert await store.get("e2") is None
        # The row holding a newline is quarantined whole (issue 11 item 7):
        # it can neither inject "zz" nor pass for e2 in one read and not another.
        assert [e["id"] for e in await store.list("s1")] == []
        assert await store.list("other") == []
        assert [(e["line"], e["reason"]) for e in store.parse_errors] == [
            (1, "entry id does not match the row's id column"),
            (2, "row holds a raw line break (the store writes one JSON line per row)"),
        ]
