"""A run under DBOS waits for the decision with DBOS's own durable wait
(``recv``) instead of pausing: the request is announced and listed in an
``approval`` checkpoint, ``DBOSAgent.decide`` sends the decision, and the
call runs once (approve) or is refused (deny). A decision for an id the
run does not wait on is refused and sends nothing. Real DBOS on SQLite."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from approval_scenario import SESSION, executions, make_agent

from prism.approvals import ApprovalDecision, ApprovalDecisionError, pending_approvals
from prism.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.anyio
dbos = pytest.importorskip("dbos")
SAFETY_TIMEOUT = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS runs workflows on asyncio


async def test_a_dbos_run_waits_durably_for_each_decision(tmp_path: Path) -> None:
    from prism.durable.dbos import DBOSAgent

    counts = tmp_path / "counts"
    agent = make_agent(SqliteSessionStore(tmp_path / "sessions.sqlite"), counts)
    wrapped = DBOSAgent(agent, name="approvals-refund-wait")
    requested: list[dict[str, Any]] = []
    arrived = threading.Event()  # the workflow may call listeners from DBOS's own thread

    def listen(event: Any) -> None:
        if event["type"] == "approval_requested":
            requested.append(event["approval"])
            arrived.set()

    wrapped.subscribe(listen)
    dbos.DBOS(
        config={
            "name": "prism-approval-tests",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
        }
    )
    dbos.DBOS.launch()
    try:
        outcomes = []
        for session_id, run_id, decision in [
            (SESSION, "run-approve", ApprovalDecision.approve()),
            ("ticket-18", "run-deny", ApprovalDecision.deny("over the limit")),
        ]:
            arrived.clear()
            handle = await wrapped.start(session_id, "refund order A-17", run_id=run_id)
            assert await anyio.to_thread.run_sync(arrived.wait, SAFETY_TIMEOUT)
            approval = requested[-1]
            waiting = await pending_approvals(agent.create_session(session_id))
            assert [a["id"] for a in waiting] == [approval["id"]]
            before = len(executions(counts, "refund"))
            for bad_session, bad_id in [(session_id, "approval_x"), ("ticket-99", approval["id"])]:
                with pytest.raises(ApprovalDecisionError, match="is not one a DBOS run"):
                    await wrapped.decide(bad_session, bad_id, "approve")
            assert await wrapped.decide(session_id, approval["id"], decision) == run_id
            assert len(executions(counts, "refund")) == before  # nothing ran while waiting
            result = await handle.get_result()
            outcomes.append(json.loads(result["text"].removeprefix("refund outcome: ")))
            with pytest.raises(ApprovalDecisionError, match="already decided"):
                await wrapped.decide(session_id, approval["id"], "approve")
    finally:
        dbos.DBOS.destroy()
    approved, denied = outcomes
    assert approved == {"error": False, "result": "refunded 1250 cents on A-17"}
    assert denied["error"] is True and "was not approved: over the limit" in json.dumps(denied)
    assert len(executions(counts, "refund")) == 1  # the approved run's, once


def test_a_run_killed_while_it_waits_is_recovered_and_decided(tmp_path: Path) -> None:
    child = Path(__file__).parent / "dbos_wait_child.py"
    args = [
        f"sqlite:///{tmp_path / 'dbos.sqlite'}",
        str(tmp_path / "s.sqlite"),
        str(tmp_path / "c"),
    ]

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(child), mode, *args],
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT * 2,
            check=False,
        )

    killed = run("start")
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert executions(tmp_path / "c", "refund") == []
    recovered = run("recover")
    assert recovered.returncode == 0, recovered.stderr[-2000:]
    text = json.loads(recovered.stdout.splitlines()[-1])["text"]
    assert text == 'refund outcome: {"error": false, "result": "refunded 1250 cents on A-17"}'
    assert len(executions(tmp_path / "c", "refund")) == 1
