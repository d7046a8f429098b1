"""The JSONL parser hides only its own containers from the garbage collector
while it builds them: the collector stays enabled for everything else, and
every container of the result is tracked again when the call returns."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest

from prism import _native as native


def entry(i: int) -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": "s",
        "parentId": None,
        "kind": "custom",
        "customType": "t",
        "data": {"items": [i, {"nested": [i, "x"]}], "flat": {"a": 1}},
    }


def jsonl(n: int) -> bytes:
    return b"".join(json.dumps(entry(i)).encode() + b"\n" for i in range(n))


@pytest.fixture
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def test_collector_stays_enabled_and_runs_during_a_large_parse(default_thresholds: None) -> None:
    data = jsonl(20_000)  # several batches: the pipelined path
    starts: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            starts.append(info["generation"])
            assert gc.isenabled()

    assert gc.isenabled()
    gc.callbacks.append(record)
    try:
        entries, errors = native.parse_session_entries(data)
    finally:
        gc.callbacks.remove(record)
    assert errors == [] and len(entries) == 20_000
    # 80k+ containers were allocated, one young collection per 700: they
    # ran during the call (a process-wide gc.disable() allowed none, and at
    # most one right after it).
    assert len(starts) >= 10, starts
    assert gc.isenabled()


def test_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        native.parse_session_entries(jsonl(50))
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("n", [3, 20_000])
def test_every_container_of_the_result_is_tracked_again(n: int) -> None:
    entries, errors = native.parse_session_entries(jsonl(n) + b"not json\n")
    assert len(errors) == 1
    assert gc.is_tracked(entries) and gc.is_tracked(errors)
    for e in (entries[0], entries[-1]):
        # Dicts holding containers are tracked; lists always are.
        assert gc.is_tracked(e) and gc.is_tracked(e["data"])
        assert gc.is_tracked(e["data"]["items"])
        assert gc.is_tracked(e["data"]["items"][1]["nested"])
        assert gc.is_tracked(e["data"]["items"][1])
    # A collection over the result finds nothing to free and breaks nothing.
    gc.collect()
    assert entries[-1] == entry(n - 1)


def test_an_entry_that_fails_to_convert_leaves_nothing_hidden() -> None:
    # The bad entry's nested containers are built (and hidden) before its
    # integer is refused; they are freed and forgotten, the line is
    # quarantined, and the rest of the result is tracked as usual.
    bad = (
        b'{"id":"h","sessionId":"s","parentId":null,"kind":"custom","customType":"n",'
        b'"data":{"a":[[1],{"b":[2]}],"x":' + b"9" * 5000 + b"}}\n"
    )
    entries, errors = native.parse_session_entries(jsonl(3) + bad + jsonl(2))
    assert [e["line"] for e in errors] == [4]
    assert len(entries) == 5
    assert all(gc.is_tracked(e) and gc.is_tracked(e["data"]["items"]) for e in entries)
    gc.collect()
    assert entries[-1] == entry(1)
