"""Stores: load + rebuild a 100k-entry session, and append throughput.

Run: .venv/bin/python -m pytest benches/test_stores_load.py --benchmark-only \
       -p no:cacheprovider -o testpaths=benches --benchmark-columns=min,mean,rounds

Baseline measured in the same run: the same file read with one
``orjson.loads`` per line plus the same per-kind shape checks in Python.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from prism.branching import rebuild_session_context
from prism.stores import create_jsonl_session_store, create_sqlite_session_store

N_ENTRIES = 100_000
SESSION = "bench-session"


def _entries(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    words = "the agent reads a file then edits code and runs tests before answering".split()
    parent: str | None = None
    for i in range(n):
        eid = f"entry_{i}"
        base: dict[str, Any] = {
            "id": eid,
            "sessionId": SESSION,
            "parentId": parent,
            "kind": "message",
            "createdAt": "2026-01-01T00:00:00.000Z",
        }
        r = i % 10
        text = " ".join(rng.choice(words) for _ in range(rng.randint(10, 120)))
        if i == 0:
            base.update(
                kind="model_change",
                model={"provider": "mock", "model": "m", "limits": {"contextWindow": 200000}},
            )
        elif r in (0, 5):
            base["message"] = {"role": "user", "content": [{"type": "text", "text": text}]}
        elif r in (1, 6):
            base["message"] = {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": text[:200]},
                    {
                        "type": "tool_call",
                        "id": f"call_{i}",
                        "name": "read_file",
                        "arguments": {"path": f"src/f{i}.py"},
                    },
                ],
            }
        elif r in (2, 7):
            base["message"] = {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": f"call_{i - 1}",
                        "name": "read_file",
                        "result": {"text": text * rng.randint(1, 4)},
                    }
                ],
            }
        elif r in (3, 8):
            base["message"] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        elif r == 4:
            base.update(kind="label", label=f"step {i}")
        else:
            base.update(kind="summary", summary=text[:300])
        if i == n // 2:
            base.update(
                kind="compaction",
                summary="older history",
                data={
                    "throughEntryId": f"entry_{i - 10}",
                    "keepEntryIds": [f"entry_{i - 2}"],
                    "strategy": "default-compaction",
                    "trigger": "auto",
                },
            )
            base.pop("message", None)
            base.pop("label", None)
        yield base
        parent = eid


@pytest.fixture(scope="module")
def session_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("stores-bench")
    jsonl = root / "session.jsonl"
    with jsonl.open("wb") as fh:
        for e in _entries(N_ENTRIES):
            fh.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    db = root / "session.db"

    async def fill() -> None:
        async with create_sqlite_session_store(db) as store:
            batch: list[Any] = []
            for e in _entries(N_ENTRIES):
                batch.append(e)
                if len(batch) == 5000:
                    await store.append_many(batch)
                    batch = []
            if batch:
                await store.append_many(batch)

    anyio.run(fill)
    return jsonl, db


_KIND_FIELDS = {
    "message": "message",
    "summary": "summary",
    "model_change": "model",
    "custom": "customType",
    "compaction": "summary",
    "label": "label",
}


def _orjson_load(path: Path) -> list[dict[str, Any]]:
    """Baseline: orjson per line + the same envelope/kind checks in Python."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    with path.open("rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                v = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if (
                not isinstance(v, dict)
                or not isinstance(v.get("id"), str)
                or not isinstance(v.get("sessionId"), str)
            ):
                continue
            p = v.get("parentId", 0)
            if not (p is None or isinstance(p, str)):
                continue
            field = _KIND_FIELDS.get(v.get("kind"))  # type: ignore[arg-type]
            if field is None or field not in v:
                continue
            if v["kind"] == "message":
                m = v["message"]
                if (
                    not isinstance(m, dict)
                    or not isinstance(m.get("role"), str)
                    or not isinstance(m.get("content"), list)
                ):
                    continue
            if v["id"] in seen:
                continue
            seen.add(v["id"])
            if v["sessionId"] == SESSION:
                entries.append(v)
    return entries


def _rebuild(entries: list[Any]) -> int:
    ctx = rebuild_session_context(entries, entries[-1]["id"])
    return len(ctx.messages)


def test_load_rebuild_jsonl_native(benchmark: Any, session_files: tuple[Path, Path]) -> None:
    jsonl, _ = session_files

    def run() -> int:
        async def go() -> list[Any]:
            return await create_jsonl_session_store(jsonl).list(SESSION)

        entries = anyio.run(go)
        assert len(entries) == N_ENTRIES
        return _rebuild(entries)

    assert benchmark.pedantic(run, rounds=3, iterations=1) > 0


def test_load_rebuild_jsonl_orjson_baseline(
    benchmark: Any, session_files: tuple[Path, Path]
) -> None:
    jsonl, _ = session_files

    def run() -> int:
        entries = _orjson_load(jsonl)
        assert len(entries) == N_ENTRIES
        return _rebuild(entries)

    assert benchmark.pedantic(run, rounds=3, iterations=1) > 0


def test_load_rebuild_sqlite(benchmark: Any, session_files: tuple[Path, Path]) -> None:
    _, db = session_files

    def run() -> int:
        async def go() -> list[Any]:
            async with create_sqlite_session_store(db) as store:
                return await store.list(SESSION)

        entries = anyio.run(go)
        assert len(entries) == N_ENTRIES
        return _rebuild(entries)

    assert benchmark.pedantic(run, rounds=3, iterations=1) > 0


def test_load_only_jsonl_native(benchmark: Any, session_files: tuple[Path, Path]) -> None:
    jsonl, _ = session_files

    async def go() -> int:
        return len(await create_jsonl_session_store(jsonl).list(SESSION))

    assert benchmark.pedantic(lambda: anyio.run(go), rounds=3, iterations=1) == N_ENTRIES


def test_load_only_jsonl_orjson_baseline(benchmark: Any, session_files: tuple[Path, Path]) -> None:
    jsonl, _ = session_files
    assert benchmark.pedantic(lambda: len(_orjson_load(jsonl)), rounds=3, iterations=1) == N_ENTRIES


def test_load_only_sqlite(benchmark: Any, session_files: tuple[Path, Path]) -> None:
    _, db = session_files

    async def go() -> int:
        async with create_sqlite_session_store(db) as store:
            return len(await store.list(SESSION))

    assert benchmark.pedantic(lambda: anyio.run(go), rounds=3, iterations=1) == N_ENTRIES


# --- append throughput -------------------------------------------------------------------

APPENDS = {False: 2000, True: 200}


@pytest.mark.parametrize("fsync", [False, True], ids=["no-fsync", "fsync"])
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_append_throughput(benchmark: Any, tmp_path: Path, kind: str, fsync: bool) -> None:
    """One benchmark round = APPENDS[fsync] single-entry appends to a fresh file."""
    entries = list(_entries(APPENDS[fsync], seed=11))
    rounds = iter(range(1000))

    def run() -> None:
        path = tmp_path / f"r{next(rounds)}.{kind}"

        async def go() -> None:
            store: Any
            if kind == "jsonl":
                store = create_jsonl_session_store(path, fsync=fsync)
            else:
                store = create_sqlite_session_store(path, fsync=fsync)
            for e in entries:
                await store.append(e)
            if hasattr(store, "aclose"):
                await store.aclose()

        anyio.run(go)

    benchmark.extra_info["appends_per_round"] = APPENDS[fsync]
    benchmark.pedantic(run, rounds=3, iterations=1)
    assert os.path.exists(tmp_path / f"r0.{kind}")
