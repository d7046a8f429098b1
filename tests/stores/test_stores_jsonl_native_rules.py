"""The native parser's rules as the JSONL store sees them: one BOM rule for
the incremental reader and a fresh one, integers beyond 64 bits exact in the
store's own copy and on disk, and bounded quarantine excerpts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prism.stores import create_jsonl_session_store, read_jsonl_session_entries

pytestmark = pytest.mark.anyio

BOM = b"\xef\xbb\xbf"


def summary(i: int) -> dict[str, Any]:
    return {"id": f"e{i}", "sessionId": "s1", "parentId": None, "kind": "summary", "summary": "x"}


def line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


async def test_mid_file_bom_is_quarantined_by_the_incremental_and_a_fresh_reader(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(BOM + line(summary(0)))  # a BOM at the very start is fine
    store = create_jsonl_session_store(path)
    assert [e["id"] for e in await store.list("s1")] == ["e0"]
    # A foreign writer appends a line that starts with a BOM, then a good one.
    with path.open("ab") as f:
        f.write(BOM + line(summary(1)) + line(summary(2)))
    incremental = [e["id"] for e in await store.list("s1")]
    fresh_store = create_jsonl_session_store(path)
    fresh = [e["id"] for e in await fresh_store.list("s1")]
    entries, errors = await read_jsonl_session_entries(path)
    assert incremental == fresh == [e["id"] for e in entries] == ["e0", "e2"]
    assert store.parse_errors == fresh_store.parse_errors == errors
    assert [(e["line"], e["reason"].split(" (")[0]) for e in errors] == [
        (2, "byte order mark at the start of a line")
    ]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    boms=st.lists(st.booleans(), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 6), max_size=3),
)
async def test_reading_as_it_grows_equals_reading_once(
    tmp_path: Path, boms: list[bool], cuts: list[int]
) -> None:
    path = tmp_path / f"grow-{len(list(tmp_path.iterdir()))}.jsonl"
    lines = [(BOM if bom else b"") + line(summary(i)) for i, bom in enumerate(boms)]
    store = create_jsonl_session_store(path)
    written = 0
    for cut in sorted({min(c, len(lines)) for c in cuts} | {len(lines)}):
        with path.open("ab") as f:
            f.write(b"".join(lines[written:cut]))
        written = cut
        await store.list("s1")  # the incremental reader catches up
    fresh = create_jsonl_session_store(path)
    assert await store.list("s1") == await fresh.list("s1")
    assert store.parse_errors == fresh.parse_errors


async def test_integers_beyond_64_bits_stay_exact_after_append_and_reopen(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.jsonl"
    values = [2**64, -(2**63) - 1, 10**400, 2**64 - 1, 1e20]
    entry = {
        "id": "b1",
        "sessionId": "s1",
        "parentId": None,
        "kind": "custom",
        "customType": "numbers",
        "data": {"values": values},
    }
    store = create_jsonl_session_store(path)
    await store.append(entry)  # type: ignore[arg-type]
    own = await store.get("b1")
    assert own is not None and own["data"]["values"] == values  # type: ignore[typeddict-item]
    reopened = await create_jsonl_session_store(path).get("b1")
    assert reopened == own
    got = reopened["data"]["values"]  # type: ignore[index, typeddict-item]
    assert [type(v) for v in got] == [int, int, int, int, float]


async def test_a_huge_garbage_line_keeps_only_an_excerpt(tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    garbage = b"#" * (20 * 1024 * 1024)
    path.write_bytes(line(summary(0)) + garbage + b"\n" + line(summary(1)))
    store = create_jsonl_session_store(path)
    assert [e["id"] for e in await store.list("s1")] == ["e0", "e1"]
    (error,) = store.parse_errors
    assert error["line"] == 2
    assert error["raw"] == "#" * 256 + "..."
