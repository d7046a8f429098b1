"""Hostile paths, arguments and rows: every store method raises only
``StoreError`` (or a subclass), with a message naming what is wrong, and a
bad row or line costs only itself (issue 11 item 7)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from prism.errors import DuplicateEntryError, StoreError
from prism.stores import (
    create_jsonl_session_store,
    create_memory_session_store,
    create_sqlite_session_store,
    read_jsonl_session_entries,
)

pytestmark = pytest.mark.anyio

SAFETY_TIMEOUT = 60.0


def summary(i: int, session: str = "s1") -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": session,
        "parentId": None,
        "kind": "summary",
        "summary": "x",
    }


def open_store(kind: str, path: Any) -> Any:
    if kind == "memory":
        return create_memory_session_store()
    return (
        create_jsonl_session_store(path) if kind == "jsonl" else create_sqlite_session_store(path)
    )


def every_call(store: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "list": lambda: store.list("s1"),
        "get": lambda: store.get("e1"),
        "list_sessions": lambda: store.list_sessions(),
        "append": lambda: store.append(summary(1)),
        "append_many": lambda: store.append_many([summary(2), summary(3)]),
        "claim": lambda: store.claim("s1"),
    }
    if hasattr(store, "path") and hasattr(store, "parse_errors") and not hasattr(store, "aclose"):
        calls["read_jsonl_session_entries"] = lambda: read_jsonl_session_entries(store.path)
    return calls


async def outcomes(store: Any) -> dict[str, str]:
    """Each method's outcome: "ok" or the StoreError message. Any other
    exception fails the test right here."""
    seen: dict[str, str] = {}
    for name, call in every_call(store).items():
        try:
            result = await call()
        except StoreError as error:
            seen[name] = str(error)
        else:
            if name == "claim":
                await result.release()
            seen[name] = "ok"
    if hasattr(store, "aclose"):
        await store.aclose()
    return seen


# --- arguments ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
@pytest.mark.parametrize("bad", [None, 5, ["s1"], {"a": 1}, b"s1"])
async def test_lookup_keys_that_are_not_strings(kind: str, bad: Any, tmp_path: Path) -> None:
    store = open_store(kind, tmp_path / "s.data")
    await store.append(summary(1))
    with pytest.raises(StoreError, match="session id must be a string"):
        await store.list(bad)
    with pytest.raises(StoreError, match="entry id must be a string"):
        await store.get(bad)
    with pytest.raises(StoreError, match="session id must be a non-empty string"):
        await store.claim(bad)
    assert [e["id"] for e in await store.list("s1")] == ["e1"]
    if hasattr(store, "aclose"):
        await store.aclose()


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize(
    ("path", "message"),
    [
        (5, "must be a str or os.PathLike, got int"),
        (b"/tmp/x", "must be a str, not bytes"),
        ("", "must be non-empty"),
        ("a\x00b", "no NUL byte"),
    ],
)
def test_store_paths_that_no_os_call_accepts(kind: str, path: Any, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        open_store(kind, path)


async def test_read_jsonl_session_entries_refuses_a_bad_path() -> None:
    with pytest.raises(StoreError, match="no NUL byte"):
        await read_jsonl_session_entries("a\x00b")


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
async def test_entry_nested_beyond_the_recursion_limit_is_a_store_error(
    kind: str, tmp_path: Path
) -> None:
    deep: Any = "leaf"
    for _ in range(sys.getrecursionlimit() + 100):
        deep = [deep]
    store = open_store(kind, tmp_path / "s.data")
    bad = dict(summary(9), metadata={"deep": deep})
    with pytest.raises(StoreError, match="'e9'"):
        await store.append(bad)
    await store.append(summary(1))
    assert [e["id"] for e in await store.list("s1")] == ["e1"]
    if hasattr(store, "aclose"):
        await store.aclose()


# --- paths ----------------------------------------------------------------------------


def hostile_paths(root: Path, name: str) -> dict[str, tuple[Path, str]]:
    """case -> (store path, text every failing method's error must hold)."""
    blocker = root / "a-file"
    blocker.write_text("x")
    directory = root / "a-dir"
    directory.mkdir()
    loop = root / "loop"
    os.symlink(loop, loop)
    to_device = root / "to-dev-null"
    os.symlink("/dev/null", to_device)
    return {
        "parent-is-a-file": (blocker / name, f"{blocker} is not a directory"),
        "grandparent-is-a-file": (blocker / "sub" / name, f"{blocker} is not a directory"),
        "path-is-a-directory": (directory, "not a regular file (it is a directory)"),
        "path-is-a-device": (to_device, "not a regular file (it is a character device)"),
        "name-too-long": (root / ("n" * 300), "too long"),
        "path-too-long": (root.joinpath(*["d" * 200] * 30, name), "too long"),
        "symlink-loop": (loop, "symbolic links"),
    }


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize(
    "case",
    [
        "parent-is-a-file",
        "grandparent-is-a-file",
        "path-is-a-directory",
        "path-is-a-device",
        "name-too-long",
        "path-too-long",
        "symlink-loop",
    ],
)
async def test_hostile_paths_raise_only_clear_store_errors(
    kind: str, case: str, tmp_path: Path
) -> None:
    path, message = hostile_paths(tmp_path, "sessions.data")[case]
    seen = await outcomes(open_store(kind, path))
    failed = {name: text for name, text in seen.items() if text != "ok"}
    # Reads of a path that cannot exist may answer "empty"; every write fails.
    assert {"append", "append_many"} <= set(failed), seen
    for name, text in failed.items():
        assert message in text, (name, text)
    assert Path("/dev/null").stat().st_size == 0  # nothing written through the symlink


FIFO_SCRIPT = """
import os, sys, anyio
from prism.errors import StoreError
from prism.stores import create_jsonl_session_store, create_sqlite_session_store
from prism.stores import read_jsonl_session_entries

async def main(kind, path):
    store = (create_jsonl_session_store if kind == "jsonl" else create_sqlite_session_store)(path)
    entry = {"id": "e1", "sessionId": "s1", "parentId": None, "kind": "summary", "summary": "x"}
    calls = [store.list("s1"), store.get("e1"), store.list_sessions(), store.append(entry)]
    if kind == "jsonl":
        calls.append(read_jsonl_session_entries(path))
    for call in calls:
        try:
            await call
            print("ok")
        except StoreError as error:
            print("StoreError", error)

anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_fifo_as_the_session_file_is_refused_never_waited_on(kind: str, tmp_path: Path) -> None:
    fifo = tmp_path / "session.fifo"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # A subprocess so that a regression hangs a child (killed by the safety
    # timeout) instead of the test run.
    done = subprocess.run(
        [sys.executable, "-c", FIFO_SCRIPT, kind, str(fifo)],
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert len(lines) == (5 if kind == "jsonl" else 4), lines
    for line in lines:
        assert line.startswith("StoreError") and "not a regular file (it is a FIFO)" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
async def test_unreadable_file_is_a_store_error(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "locked.data"
    store = open_store(kind, path)
    await store.append(summary(1))
    if hasattr(store, "aclose"):
        await store.aclose()
    path.chmod(0)
    try:
        seen = await outcomes(open_store(kind, path))
        assert all(text == "ok" or "ermission" in text for text in seen.values()), seen
        assert seen["append"] != "ok"
    finally:
        path.chmod(0o644)


# --- hostile JSONL content ------------------------------------------------------------


async def test_hostile_jsonl_lines_cost_only_themselves(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps(summary(1), separators=(",", ":")).encode()
    corpus = [
        b"\xff\xfe\xfd",
        b"[" * 10_000 + b"]" * 10_000,
        b'{"id":"x","sessionId":"s1"',
        b"\x00" * 10,
        b"null",
        b'"just a string"',
        b'{"id":5,"sessionId":"s1","parentId":null,"kind":"summary","summary":"x"}',
        b"g" * (1 << 20),
    ]
    path.write_bytes(b"\n".join([*corpus[:4], good, *corpus[4:]]) + b"\n")
    store = create_jsonl_session_store(path)
    assert [e["id"] for e in await store.list("s1")] == ["e1"]
    assert await store.list_sessions() == ["s1"]
    assert [e["line"] for e in store.parse_errors] == [1, 2, 3, 4, 6, 7, 8, 9]
    with pytest.raises(DuplicateEntryError):
        await store.append(summary(1))
    await store.append(summary(2))
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]


# --- hostile SQLite rows --------------------------------------------------------------

ROW = '{{"id":"{id}","sessionId":"{session}","parentId":null,"kind":"summary","summary":"x"}}'


def good_row(entry_id: str, session: str = "s1") -> str:
    return ROW.format(id=entry_id, session=session)


# (case, id column, session_id column, entry SQL expression, its parameters, reason)
HOSTILE_ROWS: list[tuple[str, Any, Any, str, tuple[Any, ...], str]] = [
    ("blob", "b1", "s1", "?", (good_row("b1").encode(),), "row holds blob"),
    # TEXT affinity stores numbers as text: they reach the parser and fail there.
    ("integer", "b2", "s1", "CAST(? AS INTEGER)", (42,), "not a JSON object"),
    ("real", "b3", "s1", "CAST(? AS REAL)", (1.5,), "not a JSON object"),
    ("null", "b4", "s1", "NULL", (), "row holds null"),
    (
        "newline-injects-an-entry",
        "b5",
        "s1",
        "?",
        (good_row("b5") + "\n" + good_row("injected"),),
        "raw line break",
    ),
    ("carriage-return", "b6", "s1", "?", (good_row("b6") + "\r",), "raw line break"),
    ("empty", "b7", "s1", "?", ("",), "row is empty"),
    ("whitespace", "b8", "s1", "?", ("  \t ",), "row is empty"),
    ("bom", "b9", "s1", "?", ("\ufeff" + good_row("b9"),), "byte order mark"),
    (
        "invalid-utf8",
        "b10",
        "s1",
        "CAST(? AS TEXT)",
        (b'{"id":"b10","sessionId":"s1","summary":"\xff"}',),
        "UTF-8",
    ),
    ("nul-byte", "b11", "s1", "?", (good_row("b11")[:-2] + '\x00"}',), ""),
    ("not-json", "b12", "s1", "?", ("hello",), ""),
    ("wrong-shape", "b13", "s1", "?", ('{"id":"b13","sessionId":"s1"}',), ""),
    ("id-mismatch", "b14", "s1", "?", (good_row("e1"),), "entry id does not match"),
    ("session-mismatch", "b15", "s1", "?", (good_row("b15", "s2"),), "sessionId does not match"),
    ("huge-garbage", "b16", "s1", "?", ("g" * (1 << 20),), ""),
    ("deep", "b17", "s1", "?", ("[" * 100_000 + "]" * 100_000,), ""),
]


def build_hostile_database(path: Path) -> None:
    """Our schema minus NOT NULL (as a foreign tool might create it), two
    good entries, then every hostile row; plus rows whose id or session_id
    columns are themselves broken."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE prism_entries (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " id TEXT UNIQUE, session_id TEXT, entry TEXT)"
    )
    insert = "INSERT INTO prism_entries (id, session_id, entry) VALUES (?, ?, {})"
    conn.execute(insert.format("?"), ("e1", "s1", good_row("e1")))
    for _case, entry_id, session, expr, params, _reason in HOSTILE_ROWS:
        conn.execute(insert.format(expr), (entry_id, session, *params))
    conn.execute(insert.format("?"), ("e2", "s1", good_row("e2")))
    # Broken key columns: a BLOB session id, and a session id that is not UTF-8.
    conn.execute(insert.format("?"), ("k1", b"s1", good_row("k1")))
    conn.execute(
        "INSERT INTO prism_entries (id, session_id, entry) VALUES (?, CAST(? AS TEXT), ?)",
        ("k2", b"s\xff", good_row("k2")),
    )
    conn.commit()
    conn.close()


async def test_hostile_sqlite_rows_are_quarantined_and_the_rest_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    build_hostile_database(path)
    async with create_sqlite_session_store(path) as store:
        assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]
        assert await store.list("s2") == []
        assert await store.list_sessions() == ["s1"]
        assert (await store.get("e1"))["id"] == "e1"  # type: ignore[index]
        for _case, entry_id, *_rest in HOSTILE_ROWS:
            assert await store.get(entry_id) is None
        assert await store.get("injected") is None
        errors = store.parse_errors
        # One record per hostile row of session s1, numbered by seq.
        assert [e["line"] for e in errors] == list(range(2, 2 + len(HOSTILE_ROWS)))
        for error, (case, *_cols, reason) in zip(errors, HOSTILE_ROWS, strict=True):
            assert reason.lower() in error["reason"].lower(), (case, error)
            assert len(error["raw"]) <= 260, case
        # Bad rows keep their ids: nothing is lost, and they still count.
        with pytest.raises(DuplicateEntryError, match="'b1'"):
            await store.append(summary(0) | {"id": "b1"})
        await store.append(summary(3))
        assert [e["id"] for e in await store.list("s1")] == ["e1", "e2", "e3"]


async def test_a_repaired_row_leaves_quarantine(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with create_sqlite_session_store(path) as store:
        await store.append(summary(1))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE prism_entries SET entry = CAST(entry AS BLOB)")
    conn.commit()
    async with create_sqlite_session_store(path) as store:
        assert await store.list("s1") == []
        assert [e["line"] for e in store.parse_errors] == [1]
        conn.execute("UPDATE prism_entries SET entry = CAST(entry AS TEXT)")
        conn.commit()
        assert [e["id"] for e in await store.list("s1")] == ["e1"]
        assert store.parse_errors == []
    conn.close()
