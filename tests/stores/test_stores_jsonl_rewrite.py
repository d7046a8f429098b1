"""The JSONL index notices a file rewritten in place (same inode, not shorter).

Issue 11 item 3: after ``truncate(0)`` and a longer rewrite the index used to
trust the bytes before its offset, list stale and new entries mixed, report a
phantom quarantined fragment and accept a duplicate id. Every test compares
the store's view with a fresh full parse of the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from prism.errors import DuplicateEntryError
from prism.stores import create_jsonl_session_store, read_jsonl_session_entries

pytestmark = pytest.mark.anyio


def summary(i: int, text: str = "", session: str = "s1") -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": session,
        "parentId": None,
        "kind": "summary",
        "summary": text or f"s{i}",
    }


def line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def rewrite_in_place(path: Path, data: bytes) -> None:
    """What an editor or ``cat new > file`` does: same inode, new content."""
    before = os.stat(path)
    with path.open("r+b") as fh:
        fh.truncate(0)
        fh.write(data)
    after = os.stat(path)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


async def assert_matches_full_parse(store: Any, path: Path) -> None:
    entries, errors = await read_jsonl_session_entries(path)
    seen: set[str] = set()
    expected: dict[str, list[str]] = {}
    for entry in entries:
        if entry["id"] not in seen:
            seen.add(entry["id"])
            expected.setdefault(entry["sessionId"], []).append(entry["id"])
    assert await store.list_sessions() == list(expected)
    for session, ids in expected.items():
        assert [e["id"] for e in await store.list(session)] == ids
    assert [e["line"] for e in store.parse_errors] == [e["line"] for e in errors]


async def test_truncate_then_longer_rewrite_is_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2"]
    # Longer than before, and the old offset falls inside a line.
    new = line(summary(7, "rewritten " * 20)) + line(summary(8)) + line(summary(9))
    rewrite_in_place(path, new)
    assert [e["id"] for e in await store.list("s1")] == ["e7", "e8", "e9"]
    assert store.parse_errors == []  # no phantom fragment from the old offset
    assert await store.get("e1") is None
    got = await store.get("e7")
    assert got is not None and got["summary"].startswith("rewritten")  # type: ignore[typeddict-item]
    with pytest.raises(DuplicateEntryError, match="'e8'"):
        await store.append(summary(8))  # type: ignore[arg-type]
    await store.append(summary(1))  # e1 went away with the rewrite
    await assert_matches_full_parse(store, path)


async def test_rewrite_seen_first_by_an_append_still_refuses_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = create_jsonl_session_store(path)
    await writer.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    rewrite_in_place(path, line(summary(5, "x" * 300)) + line(summary(6)))
    # The append's own catch-up (under the exclusive lock) must see the rewrite.
    with pytest.raises(DuplicateEntryError, match="'e6'"):
        await writer.append(summary(6))  # type: ignore[arg-type]
    assert [e["id"] for e in await writer.list("s1")] == ["e5", "e6"]


async def test_same_size_rewrite_is_reindexed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(1), summary(2)])  # type: ignore[list-item]
    old = path.read_bytes()
    new = line(summary(3)) + line(summary(4))
    assert len(new) == len(old)
    rewrite_in_place(path, new)
    # Timestamps have coarse granularity: make the change visible to stat the
    # way a slower edit would.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert [e["id"] for e in await store.list("s1")] == ["e3", "e4"]
    await assert_matches_full_parse(store, path)


async def test_rewrite_keeping_a_long_prefix_is_caught_at_the_tail(tmp_path: Path) -> None:
    """A tool that drops one line near the end and writes more: the first
    kilobytes are identical, the end of the indexed prefix is not."""
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(i) for i in range(300)])  # type: ignore[misc]
    assert len(await store.list("s1")) == 300
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[-2]
    rewrite_in_place(path, b"".join(lines) + line(summary(900)) + line(summary(901)))
    ids = [e["id"] for e in await store.list("s1")]
    assert "e298" not in ids and ids[-2:] == ["e900", "e901"]
    await assert_matches_full_parse(store, path)


async def test_rewrite_of_an_early_span_is_caught_by_a_fixed_sample(tmp_path: Path) -> None:
    """A same-length edit inside the first line of a file larger than 64 KB,
    plus growth: caught by the span sampled at offset 0."""
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    await store.append_many([summary(i, "y" * 100) for i in range(800)])  # type: ignore[misc]
    assert len(await store.list("s1")) == 800
    data = path.read_bytes()
    assert len(data) > 64 << 10
    edited = data.replace(b'"id":"e0"', b'"id":"q0"', 1)
    assert len(edited) == len(data)
    rewrite_in_place(path, edited + line(summary(5000)))
    assert await store.get("e0") is None
    assert await store.get("q0") is not None
    await assert_matches_full_parse(store, path)


async def test_plain_appends_by_others_stay_incremental(tmp_path: Path) -> None:
    """The prefix check must not turn every catch-up into a re-read."""
    path = tmp_path / "s.jsonl"
    writer = create_jsonl_session_store(path)
    reader = create_jsonl_session_store(path)
    for i in range(20):
        await writer.append(summary(i))  # type: ignore[arg-type]
        with path.open("ab") as fh:
            fh.write(line(summary(100 + i)))
        assert len(await reader.list("s1")) == 2 * (i + 1)
    loaded = {id(e) for e in await reader.list("s1")}
    await writer.append(summary(999))  # type: ignore[arg-type]
    again = await reader.list("s1")
    # The entries indexed before are the same objects: nothing was re-parsed.
    assert {id(e) for e in again[:-1]} == loaded
