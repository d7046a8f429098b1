"""The crash matrix under DBOS: the 6-turn durable scenario runs as a DBOS
workflow in a child process that is SIGKILLed at one point (after a store
write, inside a tool execution, at the start of a provider request); a
second process recovers it through DBOS and the run finishes there.

On SQLite (one machine) the recovering process has the same executor id
and DBOS recovers the run when it launches. On PostgreSQL (a fleet) the
crashed worker's runs are recovered by another worker, which calls
``DBOS.recover_pending_workflows`` for the dead one; the session store is
PostgreSQL too.

The expectations are those of the plain crash matrix: the branch's
messages equal an uninterrupted run's (a non-idempotent call the crash
interrupted is answered ``interrupted``), ``charge`` ran at most once per
call and ``lookup`` at most twice, no entry is stored twice, and the
frontier the replay reaches when it catches up equals the child's at the
crash.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from durable_scenario import comparable, executions
from test_crash_matrix import (
    PYTHON_DIR,
    TOOLS,
    TURNS,
    WRITES,
    baseline,
    expected_messages,
    interrupted_call,
)
from zygote import ZygoteClient

ZYGOTE = Path(__file__).parent / "dbos_zygote.py"

# The plain matrix's kill points: after every store write (every step
# boundary), inside every tool execution, at the start of every provider
# request; and on JSONL, a write torn in half.
KILLS = [
    *[("write", n) for n in range(1, WRITES + 1)],
    *[("tool", n) for n in range(1, TOOLS + 1)],
    *[("provider", n) for n in range(1, TURNS + 1)],
]
TORN = [("torn", n) for n in (2, 4, 9, 16)]


_zygotes = threading.local()


@dataclass
class Case:
    """One kill point's crash and recovery: what the recovering process
    reported, or why a child failed."""

    report: dict[str, Any] | None
    counts: Path
    frontier_at_crash: Path
    failure: str | None = None


def _crash_and_recover(home: Path, sysdb: str, store: str, what: str, n: int, fleet: bool) -> Case:
    counts = home / "counts"
    frontier_at_crash = home / "frontier.json"
    out = home / "out.json"
    case = Case(None, counts, frontier_at_crash)
    zygote: ZygoteClient = _zygotes.current
    code, output = zygote.run(
        home / "crash.out",
        "run",
        sysdb,
        store,
        str(counts),
        f"{what}:{n}",
        str(frontier_at_crash),
        "worker-a",
    )
    if code != -signal.SIGKILL:
        case.failure = f"crash child exited {code}:\n{output[-3000:]}"
        return case
    recovering = ["worker-b", "worker-a"] if fleet else ["worker-a"]
    code, output = zygote.run(
        home / "recover.out", "recover", sysdb, store, str(counts), str(out), *recovering
    )
    if code != 0:
        case.failure = f"recovery exited {code}:\n{output[-3000:]}"
        return case
    case.report = json.loads(out.read_text())
    return case


def _run_all(jobs: dict[tuple[str, int], Callable[[], Case]]) -> dict[tuple[str, int], Case]:
    """Every case's two processes, four cases at a time, forked from one
    zygote per pool thread (importing DBOS and Prism was most of a child's
    CPU time); each process otherwise waits for DBOS's queue poll (1 s)."""
    started: list[ZygoteClient] = []
    lock = threading.Lock()

    def start() -> None:
        _zygotes.current = ZygoteClient([sys.executable, str(ZYGOTE)], PYTHON_DIR)
        with lock:
            started.append(_zygotes.current)

    try:
        with ThreadPoolExecutor(max_workers=4, initializer=start) as pool:
            futures = {key: pool.submit(job) for key, job in jobs.items()}
            return {key: future.result() for key, future in futures.items()}
    finally:
        for zygote in started:
            zygote.close()


def _check(case: Case, what: str, n: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    if case.failure is not None:
        pytest.fail(case.failure, pytrace=False)
    report, counts, frontier_at_crash = case.report, case.counts, case.frontier_at_crash
    assert report is not None
    base = baseline("jsonl" if what == "torn" else "sqlite", tmp_path_factory.getbasetemp())
    assert report["text"] == "all done"
    assert report["runId"] == "run-crash"
    branch = report["branch"]
    ids = Counter(entry["id"] for entry in branch)
    assert max(ids.values()) == 1  # no entry stored twice
    # A torn write loses the stored result, not DBOS's record of the tool's
    # step (recorded before the result is appended): the replay appends the
    # recorded result, where a plain resume must answer "interrupted".
    interrupted = None if what == "torn" else interrupted_call("sqlite", what, n, base)
    assert comparable(branch) == expected_messages(base, interrupted)

    ran = executions(counts)
    for call_id, call in base.calls.items():
        limit = 2 if call["name"] == "lookup" else 1
        assert ran.get(call_id, 0) <= limit, (call_id, ran)
        if call_id != interrupted:
            assert ran.get(call_id, 0) >= 1, (call_id, ran)
    if interrupted is not None and what == "write":
        assert ran.get(interrupted, 0) == 0  # marked started, killed before it ran
    if what in ("write", "tool") and frontier_at_crash.exists():
        assert report["catchUpFrontier"] == json.loads(frontier_at_crash.read_text())
    # Each step is one checkpoint, once: a replay appended none twice.
    steps = [e["data"]["step"] for e in branch if e.get("customType") == "prism.checkpoint"]
    assert steps == sorted(set(steps))


def _ids(cases: list[tuple[str, int]]) -> list[str]:
    return [f"{what}{n}" for what, n in cases]


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Case]:
    """An SQLite system database per case (one machine: the restarted process
    recovers at launch); SQLite session stores, JSONL for the torn writes."""

    def job(what: str, n: int) -> Callable[[], Case]:
        def run() -> Case:
            home = tmp_path_factory.mktemp(f"dbos-sqlite-{what}{n}")
            kind = "jsonl" if what == "torn" else "sqlite"
            store = f"{kind}:{home / ('session.' + kind)}"
            sysdb = f"sqlite:///{home / 'dbos.sqlite'}"
            return _crash_and_recover(home, sysdb, store, what, n, fleet=False)

        return run

    return _run_all({(what, n): job(what, n) for what, n in [*KILLS, *TORN]})


@pytest.fixture(scope="module")
def on_postgres(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, int], Case]:
    """Two PostgreSQL databases per case on the throwaway server, DBOS's and
    the session store's; another worker recovers (a fleet)."""
    if not pg_server.running:
        pg_server.start()

    def job(what: str, n: int) -> Callable[[], Case]:
        sysdb = pg_server.url(pg_server.create_database())
        # Its own database, not just a schema: session leases are advisory
        # locks, which a database's schemas share (docs/postgres.md).
        store = f"postgres:{pg_server.dsn(pg_server.create_database())}"

        def run() -> Case:
            home = tmp_path_factory.mktemp(f"dbos-postgres-{what}{n}")
            return _crash_and_recover(home, sysdb, store, what, n, fleet=True)

        return run

    return _run_all({(what, n): job(what, n) for what, n in KILLS})


@pytest.mark.parametrize(("what", "n"), KILLS, ids=_ids(KILLS))
def test_dbos_on_sqlite_recovers_a_killed_run(
    what: str, n: int, on_sqlite: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check(on_sqlite[what, n], what, n, tmp_path_factory)


@pytest.mark.parametrize(("what", "n"), TORN, ids=_ids(TORN))
def test_dbos_recovers_a_run_whose_jsonl_write_was_torn(
    what: str, n: int, on_sqlite: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Half a batch reached the file: the replay finds the whole lines it
    holds and writes the rest (the torn line stays quarantined)."""
    _check(on_sqlite[what, n], what, n, tmp_path_factory)


@pytest.mark.parametrize(("what", "n"), KILLS, ids=_ids(KILLS))
def test_dbos_on_postgres_recovers_a_killed_run_on_another_worker(
    what: str, n: int, on_postgres: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check(on_postgres[what, n], what, n, tmp_path_factory)
