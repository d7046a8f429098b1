"""Property: the JSONL store's incremental index always equals a full parse.

Two store instances share one file while foreign writes damage it (garbage
lines, torn tails, a replaced or truncated file, a file rewritten in place on
the same inode that ends up longer). After every step, each
instance's view (entries per session, first occurrence of an id wins, and
the quarantined line numbers) must match parsing the whole file from scratch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prism.errors import DuplicateEntryError
from prism.stores import create_jsonl_session_store, read_jsonl_session_entries

IDS = st.sampled_from([f"e{i}" for i in range(12)])
SESSIONS = st.sampled_from(["a", "b"])


def _entry(entry_id: str, session: str, text: str) -> dict[str, Any]:
    return {
        "id": entry_id,
        "sessionId": session,
        "parentId": None,
        "kind": "summary",
        "summary": text,
    }


append_op = st.tuples(
    st.just("append"),
    st.integers(0, 1),
    st.lists(st.tuples(IDS, SESSIONS, st.text(max_size=8)), min_size=1, max_size=3),
)
foreign_op = st.tuples(
    st.just("foreign"),
    st.sampled_from(
        [
            b"garbage\n",
            b'{"id":"torn',
            b"\n",
            b"\r\n",
            b'{"id":"f1","sessionId":"a","parentId":null,"kind":"summary","summary":"x"}\n',
            b'{"id":"f2","sessionId":"b","parentId":null,"kind":"summary","summary":"y"}',
            b"\xff\xfe\n",
        ]
    ),
)
damage_op = st.tuples(
    st.just("damage"),
    st.sampled_from(
        ["truncate-half", "replace", "delete", "rewrite-grown", "rewrite-drop-last-line"]
    ),
)
OPS = st.lists(st.one_of(append_op, foreign_op, damage_op), min_size=1, max_size=14)


def _expected(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for e in entries:
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        out.setdefault(e["sessionId"], []).append(e["id"])
    return out


async def _check(path: Path, stores: list[Any]) -> None:
    entries, errors = await read_jsonl_session_entries(path)
    expected = _expected(entries)  # type: ignore[arg-type]
    for store in stores:
        for session in ("a", "b"):
            got = [e["id"] for e in await store.list(session)]
            assert got == expected.get(session, []), (session, got, expected)
        assert [e["line"] for e in store.parse_errors] == [e["line"] for e in errors]
        for entry_id, session in ((i, s) for s, ids in expected.items() for i in ids):
            got_entry = await store.get(entry_id)
            assert got_entry is not None and got_entry["sessionId"] == session


def _rewrite_in_place(path: Path, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.truncate(0)
        fh.write(data)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_incremental_index_matches_full_parse(tmp_path_factory: Any, ops: list[Any]) -> None:
    path = tmp_path_factory.mktemp("prop") / "s.jsonl"

    async def run() -> None:
        stores = [create_jsonl_session_store(path), create_jsonl_session_store(path)]
        for step, op in enumerate(ops):
            if op[0] == "append":
                _, who, items = op
                batch = [_entry(i, s, t) for i, s, t in items]
                try:
                    await stores[who].append_many(batch)  # type: ignore[arg-type]
                except DuplicateEntryError:
                    pass
            elif op[0] == "foreign":
                with path.open("ab") as fh:
                    fh.write(op[1])
            elif path.exists():
                data = path.read_bytes()
                if op[1] == "truncate-half":
                    with path.open("r+b") as fh:
                        fh.truncate(len(data) // 2)
                elif op[1] == "replace":
                    tmp = path.with_suffix(".new")
                    tmp.write_bytes(json.dumps(_entry("r1", "a", "new")).encode() + b"\n")
                    os.replace(tmp, path)
                elif op[1] == "rewrite-grown":
                    # truncate(0) then a longer rewrite on the same inode,
                    # holding the old lines again (old ids, shifted offsets).
                    head = json.dumps(_entry(f"rw{step}", "b", "head")).encode() + b"\n"
                    _rewrite_in_place(path, head + data + data[: len(data) // 3])
                elif op[1] == "rewrite-drop-last-line":
                    kept = data.rstrip(b"\n").rpartition(b"\n")[0]
                    extra = json.dumps(_entry(f"rx{step}", "a", "tail")).encode() + b"\n"
                    _rewrite_in_place(path, (kept + b"\n" if kept else b"") + extra * 2)
                else:
                    path.unlink()
            await _check(path, stores)

    anyio.run(run)
