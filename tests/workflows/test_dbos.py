"""On DBOS: the workflow is a DBOS workflow and each step a DBOS step. A
forked child runs the crash scenario (tests/workflows/crash_scenario.py) as
a DBOS workflow on an SQLite system database and SQLite session store and is
SIGKILLed right after the Nth session-store write, for every N; a second
forked child launches DBOS with the same executor id, which recovers the
workflow by itself, and reports its result. Checked as for plain resumes:
the output equals an uninterrupted run's, no step has two ``done`` records,
``prepare`` and ``charge`` ran at most once, and the agent run was never
started twice. A kill inside the non-idempotent ``prepare`` pauses the
recovered workflow: the approval is sent as a DBOS message from the
recovering process, before the wait that receives it."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import anyio
from crash_scenario import OUTPUT, Order, build
from dbos import DBOS

from prism.stores.postgres import PostgresSessionStore, create_postgres_session_store
from prism.stores.sqlite import SqliteSessionStore
from prism.workflows.dbos import DECISIONS_TOPIC, DBOSWorkflow, recover_workflows
from prism.workflows.driver import _approval_id

WRITES = 15
PREPARE_BEGIN = 2
CHARGE_START = 7
PARALLEL = 4


def launch(directory: Path, sysdb: str | None = None, executor: str = "local") -> None:
    DBOS(
        config={
            "name": "prism-workflow-crash",
            "system_database_url": sysdb or f"sqlite:///{directory / 'dbos.sqlite'}",
            "application_version": "workflow-crash",
            "executor_id": executor,
            "notification_listener_polling_interval_sec": 0.1,
        }
    )
    DBOS.launch()


def run_child(directory: Path, number: int) -> None:
    class Store(SqliteSessionStore):
        writes = 0

        async def append_many(self, entries: Any) -> None:
            await super().append_many(entries)
            self.writes += 1
            if self.writes == number:
                os.kill(os.getpid(), signal.SIGKILL)

    store = Store(str(directory / "s.sqlite"))
    durable = DBOSWorkflow(build(store, directory / "counts", f"order-{number}"), store=store)
    launch(directory)

    async def main() -> None:
        result = await durable.run(Order(id="A-17", cents=1250), workflow_id=f"order-{number}")
        (directory / "result.json").write_text(json.dumps({"output": result.output}))

    anyio.run(main)
    DBOS.destroy()


def recover_child(directory: Path, number: int) -> None:
    workflow_id = f"order-{number}"
    store = SqliteSessionStore(str(directory / "s.sqlite"))
    durable = DBOSWorkflow(build(store, directory / "counts", workflow_id), store=store)
    launch(directory)  # recovers this executor's pending workflow

    async def main() -> None:
        if number == PREPARE_BEGIN:  # the recovered run will ask about prepare
            approval = _approval_id(workflow_id, 0, "prepare", "interrupted:1")
            await DBOS.send_async(workflow_id, {approval: True}, DECISIONS_TOPIC)
        result = await durable.result(workflow_id)
        records = [e["data"] for e in await store.list(workflow_id)]
        runs = {
            e["data"]["runId"]
            for e in await store.list(f"{workflow_id}-agent")
            if e.get("customType") == "prism.checkpoint"
        }
        (directory / "result.json").write_text(
            json.dumps({"output": result.output, "records": records, "runs": sorted(runs)})
        )

    anyio.run(main)
    DBOS.destroy()


def forked(target: Any, *args: Any) -> Any:
    process = multiprocessing.get_context("fork").Process(target=target, args=args)
    process.start()
    return process


def test_a_dbos_workflow_killed_at_every_step_boundary_is_recovered(tmp_path: Path) -> None:
    cases = {n: tmp_path / f"kill{n}" for n in range(1, WRITES + 1)}
    for directory in cases.values():
        directory.mkdir()
    numbers = list(cases)
    for start in range(0, len(numbers), PARALLEL):
        batch = numbers[start : start + PARALLEL]
        runs = [(n, forked(run_child, cases[n], n)) for n in batch]
        for n, process in runs:
            process.join(120)
            assert process.exitcode == -signal.SIGKILL, f"kill {n}: {process.exitcode}"
        recovers = [(n, forked(recover_child, cases[n], n)) for n in batch]
        for n, process in recovers:
            process.join(120)
            assert process.exitcode == 0, f"recover {n}: {process.exitcode}"
    for number, directory in cases.items():
        where = f"killed after write {number}"
        report = json.loads((directory / "result.json").read_text())
        assert report["output"] == OUTPUT, where
        lines = (directory / "counts").read_text().splitlines()
        assert lines.count("prepare") == 1, where
        assert lines.count("charge") == (0 if number == CHARGE_START else 1), where
        done = [r["seq"] for r in report["records"] if r["t"] == "done"]
        assert done == list(range(5)), where
        assert len(report["runs"]) == 1, where


FLEET_KILLS = (3, CHARGE_START, 10)  # after a step, inside the agent run's tool, after it


def fleet_run(directory: Path, sysdb: str, dsn: str, number: int) -> None:
    class Store(PostgresSessionStore):
        writes = 0

        async def append_many(self, entries: Any) -> None:
            await super().append_many(entries)
            self.writes += 1
            if self.writes == number:
                os.kill(os.getpid(), signal.SIGKILL)

    async def main() -> None:
        async with Store(dsn=dsn) as store:
            flow = build(store, directory / "counts", f"fleet-{number}")
            durable = DBOSWorkflow(flow, store=store)
            launch(directory, sysdb, "worker-a")
            await durable.run(Order(id="A-17", cents=1250), workflow_id=f"fleet-{number}")

    anyio.run(main)


def fleet_recover(directory: Path, sysdb: str, dsn: str, number: int) -> None:
    workflow_id = f"fleet-{number}"

    async def main() -> None:
        async with create_postgres_session_store(dsn) as store:
            durable = DBOSWorkflow(build(store, directory / "counts", workflow_id), store=store)
            launch(directory, sysdb, "worker-b")
            assert await recover_workflows("worker-a") == [workflow_id]
            result = await durable.result(workflow_id)
            records = [e["data"] for e in await store.list(workflow_id)]
            (directory / "result.json").write_text(
                json.dumps({"output": result.output, "records": records})
            )

    anyio.run(main)
    DBOS.destroy()


def test_on_postgres_another_worker_recovers_a_dead_workers_workflow(
    pg_server: Any, tmp_path: Path
) -> None:
    runs = []
    for number in FLEET_KILLS:
        directory = tmp_path / f"fleet{number}"
        directory.mkdir()
        sysdb = pg_server.url(pg_server.create_database())
        dsn = pg_server.dsn(schema=pg_server.create_schema())
        runs.append(
            (number, directory, sysdb, dsn, forked(fleet_run, directory, sysdb, dsn, number))
        )
    for number, *_, process in runs:
        process.join(120)
        assert process.exitcode == -signal.SIGKILL, f"kill {number}: {process.exitcode}"
    recovers = [(n, d, forked(fleet_recover, d, s, q, n)) for n, d, s, q, _ in runs]
    for number, directory, process in recovers:
        process.join(120)
        assert process.exitcode == 0, f"recover {number}: {process.exitcode}"
        report = json.loads((directory / "result.json").read_text())
        assert report["output"] == OUTPUT
        lines = (directory / "counts").read_text().splitlines()
        assert lines.count("prepare") == 1
        assert lines.count("charge") == (0 if number == CHARGE_START else 1)
        assert [r["seq"] for r in report["records"] if r["t"] == "done"] == list(range(5))
