"""``prism.durable.dbos`` in this process, on an SQLite system database:
runs as workflows, run ids as idempotency keys, events, option checks, and
the import without the extra. (Killed and recovered runs: the DBOS crash
matrix, test_dbos_crash_matrix.py.)"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from durable_scenario import SESSION, comparable, executions, make_agent

import prism
from prism.durable import dbos as prism_dbos
from prism.errors import ConfigError
from prism.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.anyio
ROOT = Path(prism.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def durable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    home = tmp_path_factory.mktemp("dbos")
    agent = make_agent(SqliteSessionStore(home / "sessions.sqlite"), home / "counts")
    wrapped = prism_dbos.DBOSAgent(agent, name="billing-in-process")
    DBOS(
        config={
            "name": "prism-dbos-tests",
            "system_database_url": f"sqlite:///{home / 'dbos.sqlite'}",
            "notification_listener_polling_interval_sec": 0.1,
        }
    )
    DBOS.launch()
    try:
        yield wrapped
    finally:
        DBOS.destroy()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS runs workflows on asyncio


async def test_a_run_is_a_workflow_with_the_run_id(durable: Any, tmp_path: Path) -> None:
    events: list[Any] = []
    unsubscribe = durable.subscribe(events.append)
    try:
        result = await durable.run("s-1", "run the billing job", run_id="run-in-1")
    finally:
        unsubscribe()
    assert result.run_id == "run-in-1"
    assert result.text == "all done"
    assert result.tool_rounds == 5
    status = await DBOS.get_workflow_status_async("run-in-1")
    assert status is not None and status.status == "SUCCESS"
    assert status.name == prism_dbos.WORKFLOW_NAME
    assert {e["runId"] for e in events} == {"run-in-1"}
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "run_finished"

    plain = make_agent(SqliteSessionStore(tmp_path / "plain.sqlite"), tmp_path / "counts")
    session = plain.create_session(SESSION)
    await session.run("run the billing job")
    branch = await durable.agent.create_session("s-1").branch_entries()
    assert comparable(branch) == comparable(await session.branch_entries())


async def test_starting_a_run_id_again_never_runs_it_twice(
    durable: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = await durable.run("s-2", "run the billing job", run_id="run-in-2")
    counts = executions(Path(durable.agent.store.path).parent / "counts")
    again = await durable.run("s-2", "something else entirely", run_id="run-in-2")
    assert again == first
    assert executions(Path(durable.agent.store.path).parent / "counts") == counts
    assert await prism_dbos.DBOSAgent.result("run-in-2") == first


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"durable": True}, "always durable"),
        ({"output_type": dict}, "not workflow input"),
        ({"metadata": {"when": object()}}, "must be JSON data"),
        ({"no_such_option": 1}, "no_such_option"),
    ],
)
async def test_options_a_workflow_cannot_carry_are_refused(
    durable: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        await durable.start("s-3", "hello", run_id="run-refused", **options)
    assert await DBOS.get_workflow_status_async("run-refused") is None


async def test_bad_input_is_refused_before_a_workflow_starts(durable: Any) -> None:
    with pytest.raises(ConfigError):
        await durable.start("s-4", 42, run_id="run-bad-input")
    with pytest.raises(ConfigError, match="run_id"):
        await durable.start("s-4", "hello", run_id="")
    assert await DBOS.get_workflow_status_async("run-bad-input") is None


def test_one_name_one_agent(durable: Any, tmp_path: Path) -> None:
    other = make_agent(SqliteSessionStore(tmp_path / "o.sqlite"), tmp_path / "counts")
    with pytest.raises(ConfigError, match="already registered"):
        prism_dbos.DBOSAgent(other, name="billing-in-process")
    assert prism_dbos.DBOSAgent(durable.agent, name="billing-in-process").agent is durable.agent
    with pytest.raises(ConfigError, match="non-empty"):
        prism_dbos.DBOSAgent(other, name="")


async def test_a_run_for_an_unregistered_agent_fails_naming_it(durable: Any) -> None:
    from dbos import SetWorkflowID

    with SetWorkflowID("run-orphan"):
        handle = await DBOS.start_workflow_async(prism_dbos._prism_run, "nobody", "s-5", [], {})
    with pytest.raises(ConfigError, match="no DBOSAgent named 'nobody'"):
        await handle.get_result()


async def test_recover_runs_needs_an_executor_id(durable: Any) -> None:
    with pytest.raises(ConfigError, match="executor_id"):
        await prism_dbos.recover_runs("")
    assert await prism_dbos.recover_runs("an-executor-that-never-was") == []


def test_import_prism_durable_does_not_import_dbos() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, prism, prism.durable; prism.durable.ReplayJournal;"
            " print(sorted(m for m in sys.modules if m.split('.')[0] == 'dbos'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_missing_extra_names_it() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['dbos'] = None\n"
            "try:\n    import prism.durable.dbos\n"
            "except ImportError as e:\n    print(e)\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'prism-harness[dbos]'" in done.stdout


def test_the_dbos_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benches.dbos_overhead", "--turns", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| DBOS workflow |" in done.stdout
