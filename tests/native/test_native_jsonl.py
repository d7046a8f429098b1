from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.native.native_strategies import big_ints, json_values_with, messages_with
from tests.oracles import jsonl as oracle

from prism import _native as native

BASE = {"id": "e1", "sessionId": "s1", "parentId": None}
GOOD: list[dict[str, Any]] = [
    {
        **BASE,
        "kind": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    },
    {**BASE, "kind": "summary", "summary": "so far"},
    {**BASE, "kind": "model_change", "model": {"provider": "p", "model": "m"}},
    {**BASE, "kind": "custom", "customType": "note", "data": {"z": 1, "a": [1.5, None]}},
    {
        **BASE,
        "kind": "compaction",
        "summary": "s",
        "data": {"throughEntryId": "e0", "keepEntryIds": ["e1"], "strategy": "d", "trigger": "t"},
    },
    {**BASE, "kind": "label", "label": "checkpoint", "targetId": "e0", "createdAt": "2026-01-01"},
]


def line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def jsonl(*values: Any) -> bytes:
    return b"".join(line(v) + b"\n" for v in values)


def test_every_kind_round_trips_in_order() -> None:
    entries, errors = native.parse_session_entries(jsonl(*GOOD))
    assert errors == []
    assert entries == GOOD
    assert list(entries[3]["data"]) == ["z", "a"]  # file order, not sorted


leaf = st.one_of(
    st.none(), st.booleans(), big_ints, st.floats(allow_nan=False, allow_infinity=False), st.text()
)
data_values = st.recursive(
    leaf,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
    max_leaves=20,
)
ids = st.text(min_size=1, max_size=8)


# Integers of any size (beyond 64 bits too) come back exact, as json.loads.
messages_any = messages_with(json_values_with(big_ints, tuples=False))
entries_st = st.one_of(
    st.builds(lambda i, m: {**BASE, "id": i, "kind": "message", "message": m}, ids, messages_any),
    st.builds(lambda i, s: {**BASE, "id": i, "kind": "summary", "summary": s}, ids, st.text()),
    st.builds(
        lambda i, t, d: {
            **BASE,
            "id": i,
            "parentId": "p",
            "kind": "custom",
            "customType": t,
            "data": d,
        },
        ids,
        st.text(),
        data_values,
    ),
)
# Lines that must be quarantined: shape errors and broken JSON.
bad_lines = st.one_of(
    st.builds(
        lambda e, k: line({kk: v for kk, v in e.items() if kk != k}),
        entries_st,
        st.sampled_from(["id", "sessionId", "parentId", "kind"]),
    ),
    st.builds(lambda e, cut: line(e)[: max(1, len(line(e)) - cut)], entries_st, st.integers(1, 20)),
    st.sampled_from([b"[]", b"3", b'"x"', b"{", b'{"id":1}', b"\xff\xfe", b"nul\x00", b"   "]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(entries_st.map(line), bad_lines), max_size=12), st.booleans())
def test_native_matches_oracle(lines: list[bytes], crlf: bool) -> None:
    data = (b"\r\n" if crlf else b"\n").join(lines)
    got_entries, got_errors = native.parse_session_entries(data, first_line=5)
    want_entries, want_errors = oracle.parse_session_entries(data, first_line=5)
    assert got_entries == want_entries
    assert [e["line"] for e in got_errors] == [e["line"] for e in want_errors]
    assert [e["raw"] for e in got_errors] == [e["raw"] for e in want_errors]
    for got, want in zip(got_errors, want_errors, strict=True):
        if want["reason"].startswith("invalid JSON"):
            assert got["reason"].startswith("invalid JSON: ")
        else:
            assert got["reason"] == want["reason"]


def test_crlf_blank_lines_bom_and_no_final_newline() -> None:
    a, b = line(GOOD[1]), line(GOOD[2])
    data = b"\xef\xbb\xbf" + a + b"\r\n\r\n  \t \n\n" + b
    entries, errors = native.parse_session_entries(data)
    assert entries == [GOOD[1], GOOD[2]]
    assert errors == []


BOM = b"\xef\xbb\xbf"
BOM_REASON = (
    "byte order mark at the start of a line (a BOM is allowed only at the start of the file)"
)


def test_bom_is_allowed_only_at_the_start_of_the_file() -> None:
    a, b = line(GOOD[1]), line(GOOD[2])
    entries, errors = native.parse_session_entries(BOM + a + b"\n" + BOM + b + b"\n")
    assert entries == [GOOD[1]]
    assert errors == [{"line": 2, "reason": BOM_REASON, "raw": "\ufeff" + b.decode()}]
    # A tail that starts mid-file (first_line > 1) gets the same verdict as
    # the whole file: the incremental reader and a fresh one agree.
    tail_entries, tail_errors = native.parse_session_entries(BOM + b + b"\n", first_line=2)
    assert (tail_entries, tail_errors) == ([], errors)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.sampled_from(GOOD)), min_size=1, max_size=8),
    st.data(),
)
def test_any_split_of_a_file_parses_like_the_whole(
    rows: list[tuple[bool, dict[str, Any]]], data: st.DataObject
) -> None:
    lines = [(BOM if bom else b"") + line(e) + b"\n" for bom, e in rows]
    whole = b"".join(lines)
    cut = data.draw(st.integers(0, len(lines)))
    head, tail = b"".join(lines[:cut]), b"".join(lines[cut:])
    first = native.parse_session_entries(head) if head else ([], [])
    rest = native.parse_session_entries(tail, first_line=cut + 1) if tail else ([], [])
    assert native.parse_session_entries(whole) == (first[0] + rest[0], first[1] + rest[1])
    assert native.parse_session_entries(whole) == oracle.parse_session_entries(whole)


def test_torn_last_line_is_quarantined_and_flagged() -> None:
    torn = line(GOOD[0])[:25]
    entries, errors = native.parse_session_entries(jsonl(GOOD[1]) + torn)
    assert entries == [GOOD[1]]
    assert len(errors) == 1
    err = errors[0]
    assert err["line"] == 2 and err["raw"] == torn.decode()
    assert err["reason"].startswith("invalid JSON: EOF while parsing")
    assert err["reason"].endswith("(torn last line: no trailing newline)")


def test_invalid_utf8_is_an_error_with_replacement_raw() -> None:
    bad = b'{"id":"\xff\xfe"}'
    entries, errors = native.parse_session_entries(jsonl(GOOD[1]) + bad + b"\n" + jsonl(GOOD[2]))
    assert entries == [GOOD[1], GOOD[2]]
    assert errors == [
        {"line": 2, "reason": "invalid UTF-8 at byte 7", "raw": '{"id":"\ufffd\ufffd"}'}
    ]


def test_nul_bytes() -> None:
    data = jsonl(GOOD[1]) + b'{"id":"a\x00b"}\n' + b"\x00\n"
    entries, errors = native.parse_session_entries(data)
    assert entries == [GOOD[1]]
    assert [e["line"] for e in errors] == [2, 3]
    assert errors[0]["reason"].startswith("invalid JSON: control character")
    assert errors[0]["raw"] == '{"id":"a\x00b"}'


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ([1], "entry is not a JSON object"),
        (
            {"sessionId": "s", "parentId": None, "kind": "summary", "summary": ""},
            "missing field 'id'",
        ),
        (
            {**BASE, "id": "", "kind": "summary", "summary": ""},
            "field 'id' must be a non-empty string",
        ),
        (
            {**BASE, "sessionId": 7, "kind": "summary", "summary": ""},
            "field 'sessionId' must be a non-empty string",
        ),
        (
            {"id": "a", "sessionId": "s", "kind": "summary", "summary": ""},
            "missing field 'parentId'",
        ),
        (
            {**BASE, "parentId": 1, "kind": "summary", "summary": ""},
            "field 'parentId' must be a string or null",
        ),
        ({**BASE}, "missing field 'kind'"),
        ({**BASE, "kind": "bogus"}, "unknown kind 'bogus'"),
        ({**BASE, "kind": "summary", "summary": 1}, "field 'summary' must be a string"),
        ({**BASE, "kind": "message"}, "missing field 'message'"),
        ({**BASE, "kind": "message", "message": []}, "field 'message' must be an object"),
        ({**BASE, "kind": "message", "message": {"content": []}}, "missing field 'message.role'"),
        (
            {**BASE, "kind": "message", "message": {"role": "user", "content": {}}},
            "field 'message.content' must be a list",
        ),
        (
            {**BASE, "kind": "message", "message": {"role": "user", "content": [{}]}},
            "field 'message.content[0]' must be an object with a string 'type'",
        ),
        (
            {**BASE, "kind": "model_change", "model": {"model": "m"}},
            "missing field 'model.provider'",
        ),
        ({**BASE, "kind": "custom", "customType": None}, "field 'customType' must be a string"),
        ({**BASE, "kind": "compaction", "summary": "s"}, "missing field 'data'"),
        (
            {**BASE, "kind": "compaction", "summary": "s", "data": {}},
            "missing field 'data.keepEntryIds'",
        ),
        (
            {**BASE, "kind": "compaction", "summary": "s", "data": {"keepEntryIds": "a"}},
            "field 'data.keepEntryIds' must be a list of strings",
        ),
        (
            {
                **BASE,
                "kind": "compaction",
                "summary": "s",
                "data": {"keepEntryIds": [], "throughEntryId": 3},
            },
            "field 'data.throughEntryId' must be a string or null",
        ),
        ({**BASE, "kind": "label"}, "missing field 'label'"),
        (
            {**BASE, "kind": "label", "label": "l", "targetId": 1},
            "field 'targetId' must be a string",
        ),
        (
            {**BASE, "kind": "label", "label": "l", "metadata": []},
            "field 'metadata' must be an object",
        ),
    ],
)
def test_shape_errors_name_the_field(entry: Any, reason: str) -> None:
    data = jsonl(GOOD[1], entry, GOOD[2])
    entries, errors = native.parse_session_entries(data)
    assert entries == [GOOD[1], GOOD[2]]  # one bad line never poisons the others
    assert errors == [{"line": 2, "reason": reason, "raw": line(entry).decode()}]
    assert oracle.parse_session_entries(data)[1] == errors


def test_hundred_megabyte_line() -> None:
    big = {**BASE, "kind": "summary", "summary": "x" * (100 * 1024 * 1024)}
    data = (
        jsonl(GOOD[1], big) + b'{"broken": "' + b"y" * (100 * 1024 * 1024) + b"\n" + jsonl(GOOD[2])
    )
    entries, errors = native.parse_session_entries(data)
    assert [e["kind"] for e in entries] == ["summary", "summary", "model_change"]
    assert len(entries[1]["summary"]) == 100 * 1024 * 1024
    assert [e["line"] for e in errors] == [3]
    assert errors[0]["reason"].startswith("invalid JSON: EOF while parsing a string")
    # The record keeps a bounded excerpt, not the 100 MB line.
    assert errors[0]["raw"] == '{"broken": "' + "y" * (256 - 12) + "..."


def test_many_lines_across_batches_keep_numbers() -> None:
    payload = "z" * 5000
    rows = [{**BASE, "id": f"e{i}", "kind": "summary", "summary": payload} for i in range(4000)]
    data = b"".join(
        line(r) + b"\n" + (b"oops\n" if i % 1000 == 0 else b"") for i, r in enumerate(rows)
    )
    entries, errors = native.parse_session_entries(data)
    assert [e["id"] for e in entries] == [r["id"] for r in rows]
    assert [e["line"] for e in errors] == [2 + i * 1001 for i in range(4)]


def test_integers_past_64_bits_stay_exact() -> None:
    values = [2**64, -(2**63) - 1, 2**64 - 1, -(2**63), 10**400, -(10**400) - 7, 1e20, 2.0**70]
    entry = {**BASE, "kind": "custom", "customType": "n", "data": {"v": values, "s": "12" * 30}}
    entries, errors = native.parse_session_entries(jsonl(entry))
    assert errors == [] and entries == [entry]
    got = entries[0]["data"]["v"]
    assert [type(v) for v in got] == [type(v) for v in values]  # floats stay floats
    assert json.dumps(entries[0]) == json.dumps(entry)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers() | st.integers(min_value=-(10**330), max_value=10**330), max_size=6))
def test_any_integer_round_trips_exactly(values: list[int]) -> None:
    entry = {**BASE, "kind": "custom", "customType": "n", "data": values}
    entries, errors = native.parse_session_entries(jsonl(entry))
    assert errors == [] and entries[0]["data"] == values
    assert all(type(v) is int for v in entries[0]["data"])


def test_integer_python_cannot_convert_quarantines_only_its_line() -> None:
    # json.dumps cannot write it under CPython's default 4300-digit limit,
    # but a foreign writer can.
    huge = b'{"id":"h","sessionId":"s","parentId":null,"kind":"custom","customType":"n",'
    huge += b'"data":{"x":[1,{"y":' + b"9" * 5000 + b"}]}}"
    data = jsonl(GOOD[1]) + huge + b"\n" + jsonl(GOOD[2])
    entries, errors = native.parse_session_entries(data)
    assert entries == [GOOD[1], GOOD[2]]
    assert [e["line"] for e in errors] == [2]
    assert errors[0]["reason"].startswith("integer not convertible: Exceeds the limit (4300")
    assert errors[0]["raw"] == huge[:256].decode() + "..."


def test_numbers_and_escapes() -> None:
    entry = {
        **BASE,
        "kind": "custom",
        "customType": "n",
        "data": [
            0,
            -1,
            2**63 - 1,
            -(2**63),
            2**64 - 1,
            1.5,
            -0.0,
            1e300,
            'a"\\\n\u00e9𝄞',
            True,
            None,
        ],
    }
    entries, errors = native.parse_session_entries(jsonl(entry))
    assert errors == [] and entries == [entry]
    assert json.dumps(entries[0]) == json.dumps(entry)


def test_read_session_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(*GOOD) + b"junk\n")
    entries, errors = native.read_session_entries(path)
    assert entries == GOOD
    assert errors[0]["line"] == 7
    assert native.read_session_entries(str(path)) == (entries, errors)
    assert native.parse_session_entries(b"") == ([], [])


def test_read_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        native.read_session_entries(tmp_path / "missing.jsonl")
    assert caught.value.filename == str(tmp_path / "missing.jsonl")
    with pytest.raises(OSError):
        native.read_session_entries(tmp_path)  # a directory
    with pytest.raises(ValueError, match="first_line must be >= 1"):
        native.parse_session_entries(b"", first_line=0)
    with pytest.raises(TypeError):
        native.parse_session_entries("text")  # type: ignore[arg-type]


def test_nesting_limit_fits_every_estimable_value() -> None:
    def entry_with_depth(total: int) -> bytes:
        data: Any = 1
        for _ in range(total - 1):  # the entry object itself is one level
            data = [data]
        return line({**BASE, "kind": "custom", "customType": "t", "data": data})

    entries, errors = native.parse_session_entries(entry_with_depth(127))
    assert len(entries) == 1 and errors == []
    entries, errors = native.parse_session_entries(entry_with_depth(128))
    assert entries == []
    assert errors[0]["reason"].startswith("invalid JSON: recursion limit exceeded")
    # A message whose tool arguments sit at MAX_DEPTH still round-trips.
    args: Any = "x"
    for _ in range(native.MAX_DEPTH):
        args = {"k": args}
    message = {
        "role": "assistant",
        "content": [{"type": "tool_call", "id": "1", "name": "f", "arguments": args}],
    }
    native.estimate_message_tokens(message)
    entries, errors = native.parse_session_entries(
        line({**BASE, "kind": "message", "message": message})
    )
    assert errors == [] and entries[0]["message"] == message


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), entries_st.map(line)), max_size=8))
def test_arbitrary_bytes_never_crash_and_every_line_is_accounted_for(chunks: list[bytes]) -> None:
    data = b"\n".join(chunks)
    entries, errors = native.parse_session_entries(data)
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    non_blank = [i + 1 for i, raw in enumerate(lines) if raw.rstrip(b"\r").strip(b" \t\r")]
    error_lines = [e["line"] for e in errors]
    assert error_lines == sorted(error_lines)
    assert len(entries) + len(errors) == len(non_blank)
    assert set(error_lines) <= set(non_blank)
