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
import os
import signal
import subprocess
import sys
from collections import Counter
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

CHILD = Path(__file__).parent / "dbos_child.py"

# Every kind of boundary, not every instance of it (each case is two
# processes that launch DBOS): the input, a provider turn, a tool_start, a
# tool result, the last turn and the end checkpoint; kills inside a
# non-idempotent and an idempotent tool; a provider request killed before
# any output.
SQLITE_CASES = [
    ("write", 1),
    ("write", 2),
    ("write", 3),
    ("write", 4),
    ("write", 9),
    ("write", WRITES - 1),
    ("write", WRITES),
    ("tool", 1),
    ("tool", 2),
    ("tool", TOOLS),
    ("provider", 2),
    ("provider", TURNS),
]
POSTGRES_CASES = [("write", 2), ("write", 9), ("tool", 1), ("provider", 3)]


def _child(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(CHILD), *args],
        env={**os.environ, "PYTHONPATH": PYTHON_DIR},
        capture_output=True,
        timeout=180,
        check=False,
    )


def _crash_and_recover(
    tmp_path: Path, sysdb: str, store: str, what: str, n: int, fleet: bool
) -> tuple[dict[str, Any], Path, Path]:
    counts = tmp_path / "counts"
    frontier_at_crash = tmp_path / "frontier.json"
    out = tmp_path / "out.json"
    crashed = _child(
        "run", sysdb, store, str(counts), f"{what}:{n}", str(frontier_at_crash), "worker-a"
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr.decode()[-3000:]
    recovering = ["worker-b", "worker-a"] if fleet else ["worker-a"]
    recovered = _child("recover", sysdb, store, str(counts), str(out), *recovering)
    assert recovered.returncode == 0, recovered.stderr.decode()[-3000:]
    return json.loads(out.read_text()), counts, frontier_at_crash


def _check(
    report: dict[str, Any],
    counts: Path,
    frontier_at_crash: Path,
    what: str,
    n: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = baseline("sqlite", tmp_path_factory.getbasetemp())
    assert report["text"] == "all done"
    assert report["runId"] == "run-crash"
    branch = report["branch"]
    ids = Counter(entry["id"] for entry in branch)
    assert max(ids.values()) == 1  # no entry stored twice
    interrupted = interrupted_call("sqlite", what, n, base)
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


@pytest.mark.parametrize(("what", "n"), SQLITE_CASES, ids=[f"{w}{n}" for w, n in SQLITE_CASES])
def test_dbos_on_sqlite_recovers_a_killed_run(
    what: str, n: int, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    sysdb = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    store = f"sqlite:{tmp_path / 'session.sqlite'}"
    report, counts, frontier = _crash_and_recover(tmp_path, sysdb, store, what, n, fleet=False)
    _check(report, counts, frontier, what, n, tmp_path_factory)


@pytest.mark.parametrize(("what", "n"), POSTGRES_CASES, ids=[f"{w}{n}" for w, n in POSTGRES_CASES])
def test_dbos_on_postgres_recovers_a_killed_run_on_another_worker(
    what: str,
    n: int,
    pg_server: Any,
    pg_dsn: str,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    sysdb = pg_server.url(pg_server.create_database())
    report, counts, frontier = _crash_and_recover(
        tmp_path, sysdb, f"postgres:{pg_dsn}", what, n, fleet=True
    )
    _check(report, counts, frontier, what, n, tmp_path_factory)
