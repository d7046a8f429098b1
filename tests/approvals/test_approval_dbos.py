"""A run under DBOS (a replaying engine) cannot pause for approval:
``session.resume()`` refuses engine runs, so nothing could answer it. A call
that needs approval fails closed there: the model reads
``approval_required`` and the tool never runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from approval_scenario import SESSION, executions, make_agent

from prism.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.anyio
dbos = pytest.importorskip("dbos")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS runs workflows on asyncio


async def test_a_dbos_run_fails_closed_instead_of_pausing(tmp_path: Path) -> None:
    from prism.durable.dbos import DBOSAgent

    counts = tmp_path / "counts"
    agent = make_agent(SqliteSessionStore(tmp_path / "sessions.sqlite"), counts)
    wrapped = DBOSAgent(agent, name="approvals-refund")
    dbos.DBOS(
        config={
            "name": "prism-approval-tests",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
        }
    )
    dbos.DBOS.launch()
    try:
        result = await wrapped.run(SESSION, "refund order A-17", run_id="run-approval-1")
    finally:
        dbos.DBOS.destroy()
    assert not result.paused
    outcome = json.loads(result.text.removeprefix("refund outcome: "))
    assert outcome["error"] is True
    assert outcome["result"]["code"] == "approval_required"
    assert executions(counts, "refund") == []
    assert executions(counts, "lookup") == ["lookup call_lookup"]
