"""A workflow killed at every step boundary resumes there, in a new process,
on JSONL, SQLite and PostgreSQL.

One child process per boundary: it runs the scenario (tests/workflows/
crash_scenario.py) on the three stores at once, in lock step, and SIGKILLs
itself right after the Nth write of each: the workflow's own records and
its agent run's checkpoints, 15 writes in all. This process then resumes
each store's workflow and checks that it completes with the uninterrupted
output, that no finished step ran again (no step has two ``done``
records; ``prepare`` ran once, ``check`` at most twice), that the
non-idempotent ``charge`` tool ran at most once and the agent run was
never started twice, and that a kill between ``prepare``'s ``begin`` and
its ``done`` pauses for a human instead of running it again.
"""

from __future__ import annotations

import multiprocessing
import signal
from pathlib import Path
from typing import Any

import anyio
import crash_child
from crash_scenario import OUTPUT, build

from prism.stores.jsonl import JsonlSessionStore
from prism.stores.postgres import create_postgres_session_store
from prism.stores.sqlite import SqliteSessionStore
from prism.workflows import resume_workflow, workflow_status

WRITES = 15  # writes of one uninterrupted run on each store
PREPARE_BEGIN = 2  # the kill after it leaves the non-idempotent prepare started
CHARGE_START = 7  # the kill after it leaves the charge tool started
PARALLEL = 4


def children(pg_server: Any, tmp_path: Path) -> dict[int, tuple[Path, str]]:
    """Run every kill, PARALLEL at a time; {N: (directory, dsn)}. The children
    are forked from this process (real processes, SIGKILLed for real) so
    they skip the interpreter's start-up and imports."""
    cases: dict[int, tuple[Path, str]] = {}
    for number in range(WRITES + 1):
        directory = tmp_path / f"kill{number}"
        directory.mkdir()
        cases[number] = (directory, pg_server.dsn(schema=pg_server.create_schema()))
    fork = multiprocessing.get_context("fork")
    numbers = list(cases)
    for start in range(0, len(numbers), PARALLEL):
        running = [
            (n, fork.Process(target=crash_child.main, args=(*cases[n], n)))
            for n in numbers[start : start + PARALLEL]
        ]
        for _, child in running:
            child.start()
        for n, child in running:
            child.join(120)
            expected = 0 if n == 0 else -signal.SIGKILL
            assert child.exitcode == expected, f"kill {n}: exit code {child.exitcode}"
    # The uninterrupted run made exactly WRITES writes on each store, so the
    # kills above hit every boundary.
    assert "15 15 15" in (cases[0][0] / "writes").read_text()
    return cases


async def resume_and_check(kind: str, store: Any, directory: Path, number: int) -> None:
    where = f"{kind}, killed after write {number}"
    counts = directory / f"{kind}.counts"
    workflow_id = f"order-{number}"
    flow = build(store, counts, workflow_id)
    result = await resume_workflow(flow, store=store, workflow_id=workflow_id)
    if number == PREPARE_BEGIN:
        assert result.paused, where
        (approval,) = result.pending_approvals
        assert approval["step"] == "prepare" and "did not finish" in approval["reason"]
        assert not counts.exists() or "prepare" not in counts.read_text()
        result = await resume_workflow(
            flow, store=store, workflow_id=workflow_id, decisions={approval["id"]: True}
        )
    assert result.status == "completed" and result.output == OUTPUT, where
    lines = counts.read_text().splitlines()
    assert lines.count("prepare") == 1, where
    assert lines.count("charge") == (0 if number == CHARGE_START else 1), where
    assert 1 <= lines.count("check") <= 2, where
    records = [e["data"] for e in await store.list(workflow_id)]
    done = [r["seq"] for r in records if r["t"] == "done"]
    assert done == sorted(set(done)) == list(range(5)), where
    assert [r["t"] for r in records].count("end") == 1, where
    runs = {
        e["data"]["runId"]
        for e in await store.list(f"{workflow_id}-agent")
        if e.get("customType") == "prism.checkpoint"
    }
    assert len(runs) == 1, where
    assert (await workflow_status(store, workflow_id)).state == "completed"


def test_a_workflow_killed_at_every_step_boundary_resumes_there(
    pg_server: Any, tmp_path: Path
) -> None:
    cases = children(pg_server, tmp_path)

    async def check_all() -> None:
        for number, (directory, dsn) in cases.items():
            await resume_and_check(
                "jsonl", JsonlSessionStore(str(directory / "s.jsonl")), directory, number
            )
            await resume_and_check(
                "sqlite", SqliteSessionStore(str(directory / "s.sqlite")), directory, number
            )
            async with create_postgres_session_store(dsn) as postgres:
                await resume_and_check("postgres", postgres, directory, number)

    anyio.run(check_all)
