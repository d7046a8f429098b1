"""``prism.durable.dbos`` in this process, on an SQLite system database:
runs as workflows, run ids as idempotency keys, events, option checks, and
the import without the extra. (Killed and recovered runs: the DBOS crash
matrix, test_dbos_crash_matrix.py.)"""

from __future__ import annotations

import json
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
from prism.durable import result_to_record
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


SECRET = "sk-live-4f9a8b7c6d5e"


def _dbos_values_holding(database: Path, needle: str) -> list[str]:
    """Every value in DBOS's SQLite system database that holds ``needle``,
    as stored or inside its serialized (base64 pickle) form. Asked for the
    run id it must find the run's rows (so the search itself works)."""
    import base64
    import binascii
    import sqlite3

    found: list[str] = []
    with sqlite3.connect(database) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if not isinstance(value, str | bytes):
                        continue
                    raw = value.encode() if isinstance(value, str) else value
                    try:
                        decoded = base64.b64decode(raw, validate=True)
                    except (binascii.Error, ValueError):
                        decoded = b""
                    if needle.encode() in raw or needle.encode() in decoded:
                        found.append(f"{table}: {raw[:80]!r}")
    return found


async def test_configured_secrets_never_reach_dbos_system_database(
    durable: Any, tmp_path: Path
) -> None:
    """DBOS keeps workflow input and every step's result in its system
    database: the input, the model's text, a tool's result and its
    arguments all held the secret, and neither that database nor the
    session store holds it afterwards."""
    from prism import create_agent, create_mock_provider, define_tool
    from prism.providers import provider_done, provider_text_delta, provider_tool_call

    def script(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta(f"the key is {SECRET}"), provider_done()]
        return [provider_tool_call("c1", "vault", {"key": SECRET}), provider_done()]

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[define_tool("vault", lambda args, ctx: f"opened with {args['key']}")],
        store=SqliteSessionStore(tmp_path / "secret-sessions.sqlite"),
        secrets=[SECRET],
    )
    wrapped = prism_dbos.DBOSAgent(agent, name="secret-keeper")
    result = await wrapped.run("s-secret", f"open the vault with {SECRET}", run_id="run-secret")
    assert SECRET not in json.dumps(result_to_record(result))
    assert SECRET.encode() not in (tmp_path / "secret-sessions.sqlite").read_bytes()
    system = Path(durable.agent.store.path).parent / "dbos.sqlite"
    assert _dbos_values_holding(system, "vault")  # the recorded steps are searched
    assert _dbos_values_holding(system, SECRET) == []

    with pytest.raises(ConfigError, match="configured secret"):
        await wrapped.start("s-secret", "hello", run_id="run-secret-2", system=f"use {SECRET}")
    assert await DBOS.get_workflow_status_async("run-secret-2") is None


async def test_a_failed_steps_exception_is_kept_redacted(durable: Any, tmp_path: Path) -> None:
    """A tool_call middleware (error policy "throw") fails inside the tool's
    step with the secret in its message: DBOS keeps the step's exception,
    redacted, and the run's error says what failed without the secret."""
    from prism import (
        create_agent,
        create_middleware_registry,
        create_mock_provider,
        define_tool,
    )
    from prism.errors import PrismError
    from prism.providers import provider_done, provider_tool_call

    middleware = create_middleware_registry(error_policy="throw")

    def refuse(call: Any, next: Any) -> Any:
        raise RuntimeError(f"vault refused key {SECRET}")

    middleware.use("tool_call", refuse)
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider([[provider_tool_call("c1", "vault", {}), provider_done()]]),
        tools=[define_tool("vault", lambda args, ctx: "opened")],
        store=SqliteSessionStore(tmp_path / "failing.sqlite"),
        secrets=[SECRET],
        middleware=middleware,
    )
    wrapped = prism_dbos.DBOSAgent(agent, name="failing-vault")
    with pytest.raises(PrismError) as raised:
        await wrapped.run("s-fail", "open it", run_id="run-fail")
    assert SECRET not in str(raised.value)
    assert "vault refused key" in str(raised.value)
    status = await DBOS.get_workflow_status_async("run-fail")
    assert status is not None and status.status == "ERROR"
    system = Path(durable.agent.store.path).parent / "dbos.sqlite"
    assert _dbos_values_holding(system, "vault refused key")  # the failure is kept
    assert _dbos_values_holding(system, SECRET) == []
