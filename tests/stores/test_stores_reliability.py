"""Real processes, real files: concurrent writers, a SIGKILL, corrupt files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from prism.stores import (
    create_jsonl_session_store,
    create_sqlite_session_store,
    read_jsonl_session_entries,
)

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
WORKER = HERE / "store_worker_stores.py"
WRITERS = 4
PER_WRITER = 2500
VICTIM = 1  # the writer that gets SIGKILLed after half its acks


def budget(writer: int) -> int:
    return PER_WRITER * 100 if writer == VICTIM else PER_WRITER


def _run_writers(kind: str, path: Path) -> dict[int, list[str]]:
    """Start the writers, SIGKILL the victim midway; return each writer's acked ids."""
    # The victim is given far more work than it can finish before the kill
    # lands: otherwise, on a loaded machine, it could complete all its
    # appends before this process reads its halfway ack, and exit cleanly.
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), kind, str(path), str(w), str(budget(w))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    acks: dict[int, list[str]] = {w: [] for w in range(WRITERS)}
    finished: dict[int, bool] = {}

    def pump(w: int) -> None:
        proc = procs[w]
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ack "):
                acks[w].append(line[4:].strip())
                if w == VICTIM and len(acks[w]) == PER_WRITER // 2:
                    proc.send_signal(signal.SIGKILL)
            elif line.strip() == "done":
                finished[w] = True

    threads = [threading.Thread(target=pump, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for w, proc in enumerate(procs):
        rc = proc.wait(timeout=60)
        err = proc.stderr.read() if proc.stderr else ""
        if w == VICTIM:
            assert rc == -signal.SIGKILL, err
        else:
            assert rc == 0 and finished.get(w), err
    return acks


def _check_acked(entries: list[dict[str, Any]], acks: dict[int, list[str]]) -> None:
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "an entry was written twice"
    present = set(ids)
    for w, acked in acks.items():
        missing = [i for i in acked if i not in present]
        assert not missing, f"writer {w} lost acknowledged entries {missing[:5]}"
        # a writer's entries appear in the order it appended them
        mine = [i for i in ids if i.startswith(f"w{w}-")]
        assert mine == sorted(mine, key=lambda x: int(x.split("-")[1]))
        if w != VICTIM:
            assert len(mine) == PER_WRITER
        else:
            # nothing beyond what the killed writer had in flight: at most one
            # unacknowledged append (a batch of up to 3) landed
            assert len(acked) <= len(mine) <= len(acked) + 3


async def test_jsonl_four_writers_one_killed(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    acks = _run_writers("jsonl", path)
    entries, errors = await read_jsonl_session_entries(path)
    _check_acked(entries, acks)  # type: ignore[arg-type]
    # no interleaving: every line is a whole entry, except at most one torn line
    assert len(errors) <= 1, errors
    for err in errors:
        assert err["raw"].startswith('{"id":"w1-'), err  # only the victim can tear a line
    raw_lines = path.read_bytes().split(b"\n")
    assert raw_lines[-1] in (b"",) or len(errors) == 1
    # the next append succeeds and starts on a fresh line
    store = create_jsonl_session_store(path)
    after = {
        "id": "after-crash",
        "sessionId": "session-0",
        "parentId": None,
        "kind": "summary",
        "summary": "ok",
    }
    await store.append(after)  # type: ignore[arg-type]
    entries2, errors2 = await read_jsonl_session_entries(path)
    assert entries2[-1] == after
    assert len(errors2) == len(errors)
    assert len(entries2) == len(entries) + 1


async def test_sqlite_four_writers_one_killed(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    acks = _run_writers("sqlite", path)
    rows = sqlite3.connect(path).execute("SELECT entry FROM prism_entries ORDER BY seq").fetchall()
    entries = [json.loads(r[0]) for r in rows]
    _check_acked(entries, acks)
    async with create_sqlite_session_store(path) as store:
        after = {
            "id": "after-crash",
            "sessionId": "session-0",
            "parentId": None,
            "kind": "summary",
            "summary": "ok",
        }
        await store.append(after)  # type: ignore[arg-type]
        assert (await store.list("session-0"))[-1] == after
        total = sum([len(await store.list(f"session-{k}")) for k in range(3)])
        assert total == len(entries) + 1


KILL_MID_LINE = """
import os, sys
from prism.stores._locking import locked_fd
with locked_fd({path!r}, exclusive=True, create=True) as fd:
    os.write(fd, b'{{"id":"torn","sessionId":"s1","parentId":nu')
    print("holding", flush=True)
    sys.stdin.read()  # hold the lock until killed
"""


async def test_writer_killed_mid_line_while_holding_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = create_jsonl_session_store(path)
    first = {"id": "e1", "sessionId": "s1", "parentId": None, "kind": "summary", "summary": "one"}
    await store.append(first)  # type: ignore[arg-type]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_LINE.format(path=str(path))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    proc.kill()
    proc.wait()
    second = dict(first, id="e2", summary="two")
    await store.append(second)  # type: ignore[arg-type]  # the dead holder's lock is gone
    entries, errors = await read_jsonl_session_entries(path)
    assert entries == [first, second]
    assert [(e["line"], e["raw"]) for e in errors] == [
        (2, '{"id":"torn","sessionId":"s1","parentId":nu')
    ]
    assert [e["id"] for e in await create_jsonl_session_store(path).list("s1")] == ["e1", "e2"]


# --- corrupt-file corpus ---------------------------------------------------------

GOOD = b'{"id":"g%d","sessionId":"s","parentId":null,"kind":"summary","summary":"ok"}'


def _good(i: int) -> bytes:
    return GOOD % i


CORPUS: dict[str, tuple[bytes, list[str], list[int]]] = {
    # name: (file bytes, valid ids, quarantined line numbers)
    "truncated": (_good(1) + b"\n" + _good(2)[:30], ["g1"], [2]),
    "invalid-utf8": (
        _good(1) + b"\n" + b'{"id":"\xff\xfe","x":1}\n' + _good(3) + b"\n",
        ["g1", "g3"],
        [2],
    ),
    "wrong-shapes": (
        b"\n".join(
            [
                _good(1),
                b'{"id":1,"sessionId":"s","parentId":null,"kind":"summary","summary":"x"}',
                b'{"id":"b","sessionId":"s","parentId":null,"kind":"message","message":"hi"}',
                b'{"id":"c","sessionId":"s","parentId":null,"kind":"model_change"}',
                b'{"id":"d","sessionId":"s","parentId":false,"kind":"label","label":"x"}',
                b'{"id":"e","sessionId":"s","parentId":null,"kind":"custom"}',
                b"42",
                b'"a string"',
                b"null",
                _good(10),
            ]
        )
        + b"\n",
        ["g1", "g10"],
        [2, 3, 4, 5, 6, 7, 8, 9],
    ),
    "huge-line": (
        _good(1)
        + b"\n"
        + b'{"id":"big","sessionId":"s","parentId":null,"kind":"summary","summary":"'
        + b"x" * (8 * 1024 * 1024)
        + b'"}\n'
        + b"[" * 100_000
        + b"\n"
        + _good(4)
        + b"\n",
        ["g1", "big", "g4"],
        [3],
    ),
    "nul-bytes": (
        _good(1)
        + b"\n\x00\x00\x00\n"
        + _good(3)[:10]
        + b"\x00"
        + _good(3)[10:]
        + b"\n"
        + _good(4)
        + b"\n",
        ["g1", "g4"],
        [2, 3],
    ),
    "crlf-and-blank": (_good(1) + b"\r\n\r\n   \r\n" + _good(4) + b"\r\n", ["g1", "g4"], []),
    "only-garbage": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", [], [1, 2, 3]),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
async def test_corrupt_corpus_never_raises(tmp_path: Path, name: str) -> None:
    data, good_ids, bad_lines = CORPUS[name]
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(data)
    entries, errors = await read_jsonl_session_entries(path)
    assert [e["id"] for e in entries] == good_ids
    assert [e["line"] for e in errors] == bad_lines
    assert all(isinstance(e["reason"], str) and e["reason"] for e in errors)
    assert all(isinstance(e["raw"], str) for e in errors)
    store = create_jsonl_session_store(path)
    assert [e["id"] for e in await store.list("s")] == good_ids
    assert [e["line"] for e in store.parse_errors] == bad_lines
    # and the file stays appendable
    await store.append(
        {"id": "new", "sessionId": "s", "parentId": None, "kind": "summary", "summary": "n"}
    )
    assert [e["id"] for e in await store.list("s")] == [*good_ids, "new"]
    entries2, errors2 = await read_jsonl_session_entries(path)
    assert [e["id"] for e in entries2] == [*good_ids, "new"]
    assert [e["line"] for e in errors2] == bad_lines


def test_worker_script_is_a_file() -> None:
    assert os.path.isfile(WORKER)
