"""Session leases across processes: real subprocesses, real lock files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from prism.errors import SessionBusyError, StoreError
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.stores import (
    claim_session,
    create_jsonl_session_store,
    create_memory_session_store,
    create_sqlite_session_store,
)

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("store_worker_lease.py")
SAFETY_TIMEOUT = 60.0
FILE_KINDS = ["jsonl", "sqlite"]


def store_path(kind: str, tmp_path: Path) -> Path:
    return tmp_path / "data" / ("sessions.jsonl" if kind == "jsonl" else "sessions.db")


def open_store(kind: str, path: Path) -> Any:
    return (
        create_jsonl_session_store(path) if kind == "jsonl" else create_sqlite_session_store(path)
    )


class Holder:
    """A worker process; ``line()`` reads its next status line."""

    def __init__(self, kind: str, path: Path, session_id: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), kind, str(path), session_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().decode().strip()

    def finish(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest = self.line()
        assert self.proc.wait(timeout=SAFETY_TIMEOUT) == 0
        return rest


@pytest.fixture
def holders() -> Iterator[Any]:
    started: list[Holder] = []

    def start(kind: str, path: Path, session_id: str) -> Holder:
        holder = Holder(kind, path, session_id)
        started.append(holder)
        return holder

    yield start
    for holder in started:
        if holder.proc.poll() is None:
            holder.proc.kill()
        holder.proc.wait(timeout=SAFETY_TIMEOUT)
        for stream in (holder.proc.stdin, holder.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_a_lease_held_by_another_process_is_busy_at_once(
    kind: str, tmp_path: Path, holders: Any
) -> None:
    path = store_path(kind, tmp_path)
    holder = holders(kind, path, "shared")
    assert holder.line() == "held"
    store = open_store(kind, path)
    with pytest.raises(SessionBusyError, match="session 'shared' is busy"):
        await store.claim("shared")
    # Other sessions are unaffected.
    await (await store.claim("other")).release()
    assert holder.finish() == "released"
    await (await store.claim("shared")).release()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_a_killed_holder_releases_its_lease(kind: str, tmp_path: Path, holders: Any) -> None:
    path = store_path(kind, tmp_path)
    holder = holders(kind, path, "shared")
    assert holder.line() == "held"
    holder.proc.send_signal(signal.SIGKILL)
    assert holder.proc.wait(timeout=SAFETY_TIMEOUT) == -signal.SIGKILL
    store = open_store(kind, path)
    lease = await store.claim("shared")  # the kernel dropped the dead holder's flock
    with pytest.raises(SessionBusyError):
        await store.claim("shared")
    await lease.release()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_two_processes_racing_for_one_session_exactly_one_wins(
    kind: str, tmp_path: Path, holders: Any
) -> None:
    path = store_path(kind, tmp_path)
    racers = [holders(kind, path, "race") for _ in range(4)]
    first_lines = [racer.line() for racer in racers]
    assert first_lines.count("held") == 1, first_lines
    assert all(
        line == "held" or line.startswith("busy session 'race' is busy") for line in first_lines
    ), first_lines
    for racer in racers:
        racer.finish()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_released_leases_leave_no_files_behind(kind: str, tmp_path: Path) -> None:
    path = store_path(kind, tmp_path)
    store = open_store(kind, path)
    leases = [await store.claim(f"s{i}") for i in range(5)]
    lease_dir = Path(str(path) + ".leases")
    assert len(list(lease_dir.iterdir())) == 5
    for lease in leases:
        await lease.release()
    assert not lease_dir.exists()
    if hasattr(store, "aclose"):
        await store.aclose()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_a_stale_lock_file_left_by_a_dead_process_is_reused(
    kind: str, tmp_path: Path
) -> None:
    path = store_path(kind, tmp_path)
    store = open_store(kind, path)
    lease = await store.claim("s1")
    lease_dir = Path(str(path) + ".leases")
    (stale,) = lease_dir.iterdir()
    leftover = stale.read_bytes()
    await lease.release()
    lease_dir.mkdir()
    stale.write_bytes(leftover)  # as if the holder died before it could unlink
    async with await store.claim("s1"):
        with pytest.raises(SessionBusyError):
            await store.claim("s1")
    assert not lease_dir.exists()


@pytest.mark.parametrize("kind", FILE_KINDS)
async def test_claim_where_no_lock_file_can_exist_is_a_store_error(
    kind: str, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    store = open_store(kind, blocker / "sessions")
    with pytest.raises(StoreError, match="cannot"):
        await store.claim("s1")
    lease_path = tmp_path / ("x.jsonl" if kind == "jsonl" else "x.db")
    Path(str(lease_path) + ".leases").write_text("a file where the lease directory goes")
    with pytest.raises(StoreError, match="cannot claim session 's1'"):
        await open_store(kind, lease_path).claim("s1")


async def test_sqlite_in_memory_database_leases_in_process() -> None:
    store = create_sqlite_session_store(":memory:")
    async with await store.claim("s1"):
        with pytest.raises(SessionBusyError):
            await store.claim("s1")
    await store.aclose()


class _PlainStore:
    """A third-party store written before leases: no ``claim``."""

    def __init__(self) -> None:
        self.inner = create_memory_session_store()

    async def append(self, entry: Any) -> None:
        await self.inner.append(entry)

    async def append_many(self, entries: Any) -> None:
        await self.inner.append_many(entries)

    async def list(self, session_id: str) -> Any:
        return await self.inner.list(session_id)

    async def get(self, entry_id: str) -> Any:
        return await self.inner.get(entry_id)

    async def list_sessions(self) -> Any:
        return await self.inner.list_sessions()


async def test_claim_session_falls_back_to_a_process_local_lease() -> None:
    plain, other = _PlainStore(), _PlainStore()
    lease = await claim_session(plain, "s1")  # type: ignore[arg-type]
    with pytest.raises(SessionBusyError, match="'s1' is busy"):
        await claim_session(plain, "s1")  # type: ignore[arg-type]
    await (await claim_session(other, "s1")).release()  # another store: other data
    await lease.release()
    await (await claim_session(plain, "s1")).release()


async def test_claim_session_uses_the_store_lease(tmp_path: Path) -> None:
    a = create_jsonl_session_store(tmp_path / "s.jsonl")
    b = create_jsonl_session_store(tmp_path / "s.jsonl")
    async with await claim_session(a, "s1"):
        with pytest.raises(SessionBusyError):
            await claim_session(b, "s1")


# --- the runtime claims the store lease for every run ------------------------------


def gated_agent(store: Any, *, gated: bool = True) -> tuple[Any, anyio.Event, anyio.Event]:
    """An agent whose first provider turn (when ``gated``) streams one delta,
    then waits for ``gate``; ``started`` is set once that turn is under way."""
    gate, started = anyio.Event(), anyio.Event()
    calls = 0

    async def script(request: Any) -> Any:
        nonlocal calls
        calls += 1
        first = gated and calls == 1

        async def events() -> Any:
            yield provider_text_delta("partial" if first else "done")
            if first:
                started.set()
                await gate.wait()
            yield provider_done()

        return events()

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        store=store,
    )
    return agent, gate, started


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
async def test_a_run_holds_its_session_against_other_handles(kind: str, tmp_path: Path) -> None:
    store = (
        create_memory_session_store()
        if kind == "memory"
        else open_store(kind, store_path(kind, tmp_path))
    )
    agent, gate, started = gated_agent(store)
    # A second agent on its own store instance, as another process would have.
    other_store = store if kind == "memory" else open_store(kind, store_path(kind, tmp_path))
    other, _gate, _started = gated_agent(other_store, gated=False)
    first = agent.create_session("shared")
    second = other.create_session("shared")
    results: list[Any] = []

    async def run_first() -> None:
        results.append(await first.run("one"))

    async with anyio.create_task_group() as group:
        group.start_soon(run_first)
        await started.wait()
        with pytest.raises(SessionBusyError, match="session 'shared' is busy"):
            await second.run("two")
        with pytest.raises(SessionBusyError):
            await second.compact()
        assert len(await second.entries()) >= 1  # reads still work while it is held
        gate.set()
    assert results[0].text == "partial"
    # Released at the end of the run: the other handle runs now, on top of it.
    await second.run("two")
    entries = await second.entries()
    assert [e["parentId"] is None for e in entries].count(True) == 1  # one root
    for other_handle in (first, second):
        if hasattr(other_handle.store, "aclose"):
            await other_handle.store.aclose()


async def test_a_failed_run_releases_the_lease(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")

    async def script(request: Any) -> Any:
        raise RuntimeError("provider exploded")

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        store=store,
        retry=False,
    )
    session = agent.create_session("s1")
    with pytest.raises(Exception, match="provider exploded"):
        await session.run("hi")
    async with await store.claim("s1"):  # free again
        pass
    assert not Path(str(tmp_path / "s.jsonl") + ".leases").exists()


def echo_agent(store: Any) -> Any:
    async def script(request: Any) -> Any:
        users = [m for m in request["messages"] if m["role"] == "user"]
        text = users[-1]["content"][0]["text"]
        return [provider_text_delta(f"re: {text} ({len(users)})"), provider_done()]

    return create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        store=store,
    )


def assert_one_chain(entries: list[Any]) -> None:
    assert [e["parentId"] for e in entries] == [None] + [e["id"] for e in entries[:-1]]


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
async def test_a_loaded_handle_continues_after_another_writer_instead_of_forking(
    kind: str, tmp_path: Path
) -> None:
    """A long-lived handle (an RPC session) loaded the session, then another
    process ran it: the handle's next run follows the newest entry."""
    shared = create_memory_session_store() if kind == "memory" else None
    path = store_path(kind, tmp_path)
    long_lived = echo_agent(shared or open_store(kind, path)).create_session("s1")
    other = echo_agent(shared or open_store(kind, path)).create_session("s1")
    assert (await long_lived.run("one")).text == "re: one (1)"
    assert (await other.run("two")).text == "re: two (2)"
    assert (await long_lived.run("three")).text == "re: three (3)"  # saw "two"
    entries = await long_lived.entries()
    assert_one_chain(entries)
    assert len(entries) == 6
    assert [e["id"] for e in await long_lived.branch_entries()] == [e["id"] for e in entries]
    for handle in (long_lived, other):
        if hasattr(handle.store, "aclose"):
            await handle.store.aclose()


async def test_a_navigated_leaf_is_kept_when_nobody_else_wrote(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    session = echo_agent(store).create_session("s1")
    await session.run("one")
    await session.run("two")
    first_reply = (await session.entries())[1]
    await session.navigate(first_reply["id"])
    await session.run("again")  # branches from the first reply, as asked
    entries = await session.entries()
    assert entries[-2]["parentId"] == first_reply["id"]
    assert (await session.messages())[-1]["content"][0]["text"] == "re: again (2)"


async def test_compact_also_follows_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    mine = echo_agent(create_jsonl_session_store(path)).create_session("s1")
    theirs = echo_agent(create_jsonl_session_store(path)).create_session("s1")
    await mine.run("one")
    await theirs.run("two")
    entry = await mine.compact(keep_recent_entries=1)
    entries = await theirs.entries()
    assert entry["id"] == entries[-1]["id"]
    assert_one_chain(entries)


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
async def test_last_entry_id_matches_list(kind: str, tmp_path: Path) -> None:
    store = (
        create_memory_session_store()
        if kind == "memory"
        else open_store(kind, store_path(kind, tmp_path))
    )
    assert await store.last_entry_id("s1") is None
    for i in range(3):
        await store.append(
            {"id": f"e{i}", "sessionId": "s1", "parentId": None, "kind": "summary", "summary": "x"}
        )
    await store.append(
        {"id": "o1", "sessionId": "s2", "parentId": None, "kind": "summary", "summary": "x"}
    )
    assert await store.last_entry_id("s1") == (await store.list("s1"))[-1]["id"] == "e2"
    with pytest.raises(StoreError, match="session id must be a string"):
        await store.last_entry_id(None)
    if hasattr(store, "aclose"):
        await store.aclose()


async def test_sqlite_last_entry_id_skips_quarantined_rows(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    async with create_sqlite_session_store(path) as store:
        await store.append(
            {"id": "e0", "sessionId": "s1", "parentId": None, "kind": "summary", "summary": "x"}
        )
    conn = sqlite3.connect(path)
    for i in range(20):  # more bad rows than the first look-back reads
        conn.execute(
            "INSERT INTO prism_entries (id, session_id, entry) VALUES (?, 's1', ?)",
            (f"bad{i}", b"blob"),
        )
    conn.commit()
    conn.close()
    async with create_sqlite_session_store(path) as store:
        assert await store.last_entry_id("s1") == "e0"
        assert [e["id"] for e in await store.list("s1")] == ["e0"]
