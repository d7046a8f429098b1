"""PostgreSQL with many processes: concurrent writers with one SIGKILLed,
a server restart under load, and session leases across processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.pg_server import PgServer

from prism.errors import SessionBusyError
from prism.stores.postgres import create_postgres_session_store

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("store_worker_postgres.py")
SAFETY_TIMEOUT = 120.0
WRITERS = 8
PER_WRITER = 500
VICTIM = 3


def spawn(dsn: str, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["PRISM_TEST_DSN"] = dsn
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=SAFETY_TIMEOUT)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def stored_rows(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return [
            (str(r[0]), str(r[1]))
            for r in conn.execute("SELECT id, session_id FROM prism_entries ORDER BY seq")
        ]


def check_consistent(
    rows: list[tuple[str, str]], acks: dict[int, list[str]], budgets: dict[int, int]
) -> None:
    """Every acked id stored once, each writer's ids in its order, and every
    batch (ids i..i+2 with i % 4 == 3) stored whole or not at all."""
    ids = [r[0] for r in rows]
    counts = Counter(ids)
    assert not [i for i, n in counts.items() if n > 1], "duplicate rows"
    stored = set(ids)
    for writer, acked in acks.items():
        assert set(acked) <= stored, f"writer {writer} lost acknowledged entries"
        mine = [i for i in ids if i.startswith(f"w{writer}-")]
        assert mine == sorted(mine, key=lambda x: int(x.split("-")[1])), "order"
        numbers = {int(i.split("-")[1]) for i in mine}
        # The worker writes batches {b, b+1, b+2} for b = 3, 7, 11, ... and
        # single entries in between.
        for n in numbers:
            if n % 4 == 2 or n < 3:
                continue
            start = n - (n - 3) % 4
            if start + 3 > budgets[writer]:
                continue  # the tail of a run is single appends
            batch = {start, start + 1, start + 2}
            assert batch <= numbers, f"partial batch {sorted(batch)} of writer {writer}"


def pump_acks(
    workers: list[subprocess.Popen[str]], on_ack: Any = None
) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    acks: dict[int, list[str]] = {w: [] for w in range(len(workers))}
    other: dict[int, list[str]] = {w: [] for w in range(len(workers))}

    def pump(w: int) -> None:
        stdout = workers[w].stdout
        assert stdout is not None
        for line in stdout:
            if line.startswith("ack "):
                acks[w].append(line[4:].strip())
                if on_ack is not None:
                    on_ack(w, len(acks[w]))
            else:
                other[w].append(line.strip())

    threads = [threading.Thread(target=pump, args=(w,)) for w in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SAFETY_TIMEOUT)
    return acks, other


async def test_eight_writers_one_sigkilled_mid_batch(pg_dsn: str, procs: list[Any]) -> None:
    async with create_postgres_session_store(pg_dsn) as store:
        await store.list("session-0")  # create the schema once, before the race
    # The victim gets far more work than it can finish before the kill.
    budgets = {w: PER_WRITER * 100 if w == VICTIM else PER_WRITER for w in range(WRITERS)}
    for w in range(WRITERS):
        procs.append(spawn(pg_dsn, "append", str(w), str(budgets[w])))

    def kill_victim(w: int, acked: int) -> None:
        if w == VICTIM and acked == PER_WRITER // 2:
            procs[w].send_signal(signal.SIGKILL)

    acks, other = pump_acks(procs, kill_victim)
    for w, proc in enumerate(procs):
        rc = proc.wait(timeout=SAFETY_TIMEOUT)
        if w == VICTIM:
            assert rc == -signal.SIGKILL
        else:
            assert rc == 0 and other[w] == ["done"], proc.stderr.read()
            assert len(acks[w]) == PER_WRITER
    rows = stored_rows(pg_dsn)
    check_consistent(rows, acks, budgets)
    victim_stored = [r for r in rows if r[0].startswith(f"w{VICTIM}-")]
    assert len(acks[VICTIM]) <= len(victim_stored) <= len(acks[VICTIM]) + 3
    async with create_postgres_session_store(pg_dsn) as store:
        await store.append({**_entry("after-kill"), "sessionId": "session-0"})  # type: ignore[typeddict-item]
        assert (await store.list("session-0"))[-1]["id"] == "after-kill"


def _entry(entry_id: str) -> dict[str, Any]:
    return {
        "id": entry_id,
        "sessionId": "s1",
        "parentId": None,
        "kind": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": entry_id}]},
    }


async def test_server_restarted_while_writers_run(
    pg_server: PgServer, pg_dsn: str, procs: list[Any]
) -> None:
    async with create_postgres_session_store(pg_dsn) as store:
        await store.list("session-0")
    with psycopg.connect(pg_dsn) as conn:
        started = conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]  # type: ignore[index]
    count = 300
    for w in range(2):
        procs.append(spawn(pg_dsn, "append", str(w), str(count), "retry"))
    restarted = threading.Event()

    def restart(w: int, acked: int) -> None:
        if w == 0 and acked == count // 3 and not restarted.is_set():
            restarted.set()
            pg_server.restart()

    acks, other = pump_acks(procs, restart)
    for w, proc in enumerate(procs):
        assert proc.wait(timeout=SAFETY_TIMEOUT) == 0, proc.stderr.read()
        assert other[w][-1] == "done"
        assert all(line.startswith("retry ") for line in other[w][:-1])
        assert len(acks[w]) == count
    assert restarted.is_set()
    # Appends that met the restart either waited for a connection (the pool
    # waits up to connect_timeout) or failed and were retried; both are fine
    # as long as the store ends up consistent.
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT pg_postmaster_start_time() > %s", [started]).fetchone()
    assert row == (True,), "the server was not restarted during the run"
    rows = stored_rows(pg_dsn)
    check_consistent(rows, acks, {0: count, 1: count})
    assert len(rows) == 2 * count


async def test_server_restart_between_agent_runs(pg_server: PgServer, pg_dsn: str) -> None:
    """A run while the server is down fails cleanly (StoreError, nothing half
    stored); once the server is back the next run works on a consistent branch."""
    from prism.errors import StoreError
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    store = create_postgres_session_store(pg_dsn, connect_timeout=0.5)
    script = [[provider_text_delta(f"answer {t}"), provider_done()] for t in range(3)]
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(script),
        store=store,
    )
    session = agent.create_session("s1")
    await session.run("one")
    pg_server.stop()
    try:
        with pytest.raises(StoreError):
            await session.run("two (server down)")
    finally:
        pg_server.start()
    result = await session.run("three")
    assert result.text.startswith("answer")
    entries = await store.list("s1")
    by_id = {e["id"]: e for e in entries}
    for e in entries:
        assert e["parentId"] is None or e["parentId"] in by_id, "dangling parent"
    texts = [
        e["message"]["content"][0]["text"]  # type: ignore[typeddict-item]
        for e in entries
        if e["kind"] == "message"
    ]
    assert "one" in texts and "three" in texts and "two (server down)" not in texts
    await store.aclose()


# --- leases across processes --------------------------------------------------------


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def finish(proc: subprocess.Popen[str]) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    rest = proc.stdout.read().strip()
    assert proc.wait(timeout=SAFETY_TIMEOUT) == 0, proc.stderr.read() if proc.stderr else ""
    return rest


async def test_a_lease_held_by_another_process_is_busy_at_once(
    pg_dsn: str, procs: list[Any]
) -> None:
    procs.append(spawn(pg_dsn, "lease", "shared"))
    assert first_line(procs[0]).startswith("held ")
    async with create_postgres_session_store(pg_dsn) as store:
        with pytest.raises(SessionBusyError, match="session 'shared' is busy"):
            await store.claim("shared")
        await (await store.claim("other")).release()
        assert finish(procs[0]) == "released"
        await (await store.claim("shared")).release()


def wait_backend_gone(dsn: str, pid: int) -> None:
    """Until the server has reaped the dead holder's backend (polling the
    server; each poll is a round trip, no sleeping)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                continue
            return
    raise AssertionError(f"backend {pid} outlived its client")


async def test_a_killed_holder_lease_is_reclaimed(pg_dsn: str, procs: list[Any]) -> None:
    procs.append(spawn(pg_dsn, "lease", "shared"))
    line = first_line(procs[0])
    assert line.startswith("held ")
    procs[0].send_signal(signal.SIGKILL)
    assert procs[0].wait(timeout=SAFETY_TIMEOUT) == -signal.SIGKILL
    wait_backend_gone(pg_dsn, int(line.split()[1]))
    async with create_postgres_session_store(pg_dsn) as store:
        lease = await store.claim("shared")
        with pytest.raises(SessionBusyError):
            await store.claim("shared")
        await lease.release()


async def test_a_lease_whose_connection_died_is_lost_and_reclaimed(pg_dsn: str) -> None:
    async with (
        create_postgres_session_store(pg_dsn) as a,
        create_postgres_session_store(pg_dsn) as b,
    ):
        lease = await a.claim("s1")
        assert not lease.lost
        conn = a._leases._conn
        assert conn is not None
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        wait_backend_gone(pg_dsn, conn.info.backend_pid)
        # The server dropped the lock with the connection: b can take it.
        taken = await b.claim("s1")
        # a notices on its next lease operation and reports its old lease lost.
        with pytest.raises(SessionBusyError):
            await a.claim("s1")
        assert lease.lost
        await lease.release()  # a no-op: nothing to unlock
        await taken.release()
        await (await a.claim("s1")).release()


async def test_two_workers_racing_for_one_session_exactly_one_runs(
    pg_dsn: str, procs: list[Any]
) -> None:
    async with create_postgres_session_store(pg_dsn) as store:
        await store.list("race")
    for _ in range(4):
        procs.append(spawn(pg_dsn, "run", "race"))
    firsts = [first_line(p) for p in procs]
    assert firsts.count("claimed") == 1, firsts
    assert all(f == "claimed" or f.startswith("busy session 'race' is busy") for f in firsts)
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [finish(p) for p in procs]
    assert sorted(results) == ["", "", "", "ran 3"]
    async with create_postgres_session_store(pg_dsn) as store:
        entries = await store.list("race")
    users = [
        e["message"]["content"][0]["text"]  # type: ignore[typeddict-item]
        for e in entries
        if e["kind"] == "message" and e["message"]["role"] == "user"  # type: ignore[typeddict-item]
    ]
    assert len(users) == 3
    assert len({u.split("pid ")[1] for u in users}) == 1  # all from the one winner


async def test_a_run_in_another_process_makes_this_run_busy(pg_dsn: str, procs: list[Any]) -> None:
    """No explicit claims: the runtime claims the session for each run, so a
    second process's run on the session is refused while the first runs."""
    async with create_postgres_session_store(pg_dsn) as store:
        await store.list("shared")
    procs.append(spawn(pg_dsn, "agent-run", "shared"))
    assert first_line(procs[0]) == "running"
    procs.append(spawn(pg_dsn, "agent-run", "shared"))
    assert first_line(procs[1]).startswith("busy session 'shared' is busy")
    assert finish(procs[1]) == ""
    assert finish(procs[0]).startswith("ran answer from pid")
    async with create_postgres_session_store(pg_dsn) as store:
        entries = await store.list("shared")
    assert [e["message"]["role"] for e in entries if e["kind"] == "message"] == [  # type: ignore[typeddict-item]
        "user",
        "assistant",
    ]
