"""JSONL specifics: golden files, the incremental index, torn lines, locks."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import prism.stores.jsonl as jsonl_module
from prism.errors import DuplicateEntryError, StoreError
from prism.stores import (
    create_jsonl_session_store,
    create_sqlite_session_store,
    read_jsonl_session_entries,
)

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
GOLDEN = FIXTURES / "all-kinds.jsonl"


def summary(i: int, session: str = "s1") -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": session,
        "parentId": None,
        "kind": "summary",
        "summary": f"s{i}",
    }


async def test_golden_file_reads_every_kind() -> None:
    entries, errors = await read_jsonl_session_entries(GOLDEN)
    assert errors == []
    assert [e["kind"] for e in entries] == [
        "model_change",
        "message",
        "message",
        "message",
        "message",
        "summary",
        "custom",
        "label",
        "compaction",
        "message",
        "custom",
    ]
    compaction = entries[8]
    assert compaction["data"] == {  # type: ignore[typeddict-item]
        "throughEntryId": "entry_4",
        "keepEntryIds": ["entry_5"],
        "strategy": "default-compaction",
        "trigger": "manual",
    }
    assert entries[4]["message"]["content"][0]["text"].endswith("café ☕ 日本語.")  # type: ignore[typeddict-item]


async def test_golden_file_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    entries, _ = await read_jsonl_session_entries(GOLDEN)
    store = create_jsonl_session_store(tmp_path / "out.jsonl")
    await store.append(entries[0])
    await store.append_many(entries[1:6])
    for e in entries[6:]:
        await store.append(e)
    assert (tmp_path / "out.jsonl").read_bytes() == GOLDEN.read_bytes()


async def test_golden_lines_are_the_sqlite_rows(tmp_path: Path) -> None:
    entries, _ = await read_jsonl_session_entries(GOLDEN)
    async with create_sqlite_session_store(tmp_path / "s.db") as store:
        await store.append_many(entries)
        assert await store.list("session_golden") == entries
    rows = sqlite3.connect(tmp_path / "s.db").execute(
        "SELECT entry FROM prism_entries ORDER BY seq"
    )
    assert "".join(r[0] + "\n" for r in rows).encode() == GOLDEN.read_bytes()


async def test_quarantine_golden_reports_each_bad_line() -> None:
    expected = json.loads((FIXTURES / "quarantine.expected.json").read_text())
    entries, errors = await read_jsonl_session_entries(FIXTURES / "quarantine.jsonl")
    assert [e["id"] for e in entries] == expected["entryIds"]
    assert [err["line"] for err in errors] == expected["errorLines"]
    assert all(err["reason"] for err in errors)
    assert errors[0]["raw"] == "not json at all"


async def test_missing_file_is_empty_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "none.jsonl"
    store = create_jsonl_session_store(path)
    assert await store.list("s1") == []
    assert await store.get("x") is None
    assert await read_jsonl_session_entries(path) == ([], [])
    assert not path.exists()
    assert not path.parent.exists()


async def test_create_directory_false_reports_missing_directory(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "nope" / "s.jsonl", create_directory=False)
    with pytest.raises(StoreError, match="cannot append to session file"):
        await store.append(summary(1))  # type: ignore[arg-type]


async def test_parent_that_is_a_file_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    store = create_jsonl_session_store(blocker / "sessions.jsonl")
    with pytest.raises(StoreError, match="cannot append to session file"):
        await store.append(summary(1))  # type: ignore[arg-type]
    assert blocker.read_text() == "x"


async def test_appends_use_compact_utf8_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path, fsync=True)
    e = summary(1)
    e["summary"] = "naïve ✓"
    await store.append(e)  # type: ignore[arg-type]
    assert (
        path.read_bytes()
        == (
            '{"id":"e1","sessionId":"s1","parentId":null,"kind":"summary","summary":"naïve ✓"}\n'
        ).encode()
    )


async def test_torn_last_line_is_quarantined_and_next_append_starts_fresh(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    with path.open("ab") as fh:
        fh.write(b'{"id":"e3","sessionId":"s1","pa')  # a writer died here
    reader = create_jsonl_session_store(path)
    assert [e["id"] for e in await reader.list("s1")] == ["e1", "e2"]
    await store.append(summary(4))  # type: ignore[arg-type]
    assert path.read_bytes().endswith(
        b'"pa\n{"id":"e4"' + b',"sessionId":"s1","parentId":null,"kind":"summary","summary":"s4"}\n'
    )
    entries, errors = await read_jsonl_session_entries(path)
    assert [e["id"] for e in entries] == ["e1", "e2", "e4"]
    assert [err["line"] for err in errors] == [3]
    assert [e["id"] for e in await reader.list("s1")] == ["e1", "e2", "e4"]
    assert [err["line"] for err in reader.parse_errors] == [3]
    assert [err["line"] for err in store.parse_errors] == [3]


async def test_valid_last_line_without_newline_counts_for_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = json.dumps(summary(1), separators=(",", ":"))
    path.write_text(line)  # hand-written file, no final newline
    store = create_jsonl_session_store(path)
    with pytest.raises(DuplicateEntryError):
        await store.append(summary(1))  # type: ignore[arg-type]
    await store.append(summary(2))  # type: ignore[arg-type]
    assert path.read_text() == line + "\n" + json.dumps(summary(2), separators=(",", ":")) + "\n"
    entries, errors = await read_jsonl_session_entries(path)
    assert ([e["id"] for e in entries], errors) == (["e1", "e2"], [])


async def test_index_catches_up_incrementally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    writer = create_jsonl_session_store(path)
    reader = create_jsonl_session_store(path)
    await writer.append_many([summary(i) for i in range(50)])  # type: ignore[misc]
    assert len(await reader.list("s1")) == 50

    parsed: list[tuple[int, int]] = []
    real = jsonl_module.parse_lines

    def spy(data: bytes, first_line: int = 1) -> Any:
        parsed.append((len(data), first_line))
        return real(data, first_line)

    monkeypatch.setattr(jsonl_module, "parse_lines", spy)
    for _ in range(3):  # nothing changed: answered from the index
        assert len(await reader.list("s1")) == 50
        assert await reader.get("e7") is not None
    assert parsed == []
    await writer.append(summary(50))  # type: ignore[arg-type]
    assert len(await reader.list("s1")) == 51
    line_len = len(json.dumps(summary(50), separators=(",", ":"))) + 1
    assert parsed == [(line_len, 51)]  # only the new line, numbered after the old ones


async def test_replaced_file_is_reread(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(summary(9)) + "\n")
    os.replace(other, path)
    assert [e["id"] for e in await store.list("s1")] == ["e9"]
    await store.append(summary(1))  # type: ignore[arg-type]  # e1 is gone with the old file
    assert [e["id"] for e in await store.list("s1")] == ["e9", "e1"]


async def test_truncated_file_is_reread(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    first = path.read_bytes().split(b"\n")[0] + b"\n"
    with path.open("r+b") as fh:
        fh.truncate(len(first))
    assert [e["id"] for e in await store.list("s1")] == ["e1"]
    await store.append(summary(2))  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]


async def test_deleted_file_reads_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append(summary(1))  # type: ignore[arg-type]
    path.unlink()
    assert await store.list("s1") == []
    await store.append(summary(1))  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1"]


async def test_foreign_duplicate_lines_first_wins(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    a = dict(summary(1), summary="first")
    b = dict(summary(1), summary="second")
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    store = create_jsonl_session_store(path)
    assert [e["summary"] for e in await store.list("s1")] == ["first"]  # type: ignore[typeddict-item]
    got = await store.get("e1")
    assert got is not None and got["summary"] == "first"  # type: ignore[typeddict-item]


async def test_failed_write_leaves_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append(summary(1))  # type: ignore[arg-type]
    before = path.read_bytes()
    real_write = os.write

    def half_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(jsonl_module.os, "write", half_write)
    with pytest.raises(StoreError, match="short write"):
        await store.append_many([summary(2), summary(3)])  # type: ignore[list-item]
    monkeypatch.undo()
    assert path.read_bytes() == before
    await store.append(summary(2))  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]


async def test_foreign_newline_closing_a_torn_line_is_not_doubled(tmp_path: Path) -> None:
    # Found by the index property test: a torn tail closed by a bare "\n"
    # from someone else must not make our next append add a second newline.
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"id":"torn')
    store = create_jsonl_session_store(path)
    assert await store.list("s1") == []
    with path.open("ab") as fh:
        fh.write(b"\n")
    assert await store.list("s1") == []
    await store.append(summary(1))  # type: ignore[arg-type]
    assert path.read_bytes().count(b"\n\n") == 0
    with path.open("ab") as fh:
        fh.write(b"garbage\n")
    _entries, errors = await read_jsonl_session_entries(path)
    assert [e["line"] for e in errors] == [1, 3]
    assert [e["line"] for e in create_jsonl_session_store(path).parse_errors] == []
    assert [e["line"] for e in store.parse_errors] == [1]
    await store.list("s1")
    assert [e["line"] for e in store.parse_errors] == [1, 3]


async def test_cancelled_append_still_lands_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append(summary(1))  # type: ignore[arg-type]
    in_write = anyio.Event()
    release = threading.Event()
    real_write = os.write

    def slow_write(fd: int, data: bytes) -> int:
        anyio.from_thread.run_sync(in_write.set)
        release.wait(timeout=30)
        return real_write(fd, data)

    monkeypatch.setattr(jsonl_module.os, "write", slow_write)
    finished = False
    with anyio.CancelScope() as scope:

        async def cancel_when_writing() -> None:
            await in_write.wait()
            scope.cancel()
            release.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_writing)
            await store.append_many([summary(2), summary(3)])  # type: ignore[list-item]
            await anyio.lowlevel.checkpoint()  # the pending cancellation lands here
            finished = True
    assert scope.cancelled_caught and not finished
    monkeypatch.undo()
    entries, errors = await read_jsonl_session_entries(path)
    assert ([e["id"] for e in entries], errors) == (["e1", "e2", "e3"], [])
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2", "e3"]
