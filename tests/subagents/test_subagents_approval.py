"""A child waiting for approval pauses its parent on the delegation; the
parent's decision reaches the child (in one process, on a memory store;
the cross-process case is test_subagents_resume.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from subagent_scenario import PARENT, Scenario, lines

from prism.approvals import ApprovalDecision
from prism.stores import MemorySessionStore

pytestmark = pytest.mark.anyio


async def test_a_denied_delegation_is_settled_by_reconcile(tmp_path: Path) -> None:
    store, counts = MemorySessionStore(), tmp_path / "counts"
    calls = [("call_approve", "approver")]
    paused = await Scenario(store, counts).parent(calls).create_session(PARENT).run("go")
    (approval,) = paused.pending_approvals
    child_session = approval["action"]["childSessionId"]

    scenario = Scenario(store, counts)
    resumed = scenario.parent(calls).create_session(PARENT)
    done = await resumed.resume(decisions={approval["id"]: ApprovalDecision.deny("not today")})
    assert done is not None and not done.paused
    # The runtime answers a denied call without running the tool.
    result = json.loads(done.text)["call_approve"]["result"]
    assert "was not approved: not today" in result["message"]
    assert lines(counts, "tool publish") == []
    # So the child is still suspended until the supervisor reconciles it.
    assert await scenario.supervisor.reconcile(resumed) == [child_session]
    entries = await store.list(child_session)
    (outcome,) = [e["data"] for e in entries if e.get("customType") == "prism.subagent.outcome"]
    assert outcome["outcome"] == "abort" and "not today" in outcome["reason"]
    assert await scenario.supervisor.reconcile(resumed) == []  # settled once
    assert lines(counts, "spawn approver") == ["spawn approver resumed=False"]


async def test_a_parent_resumed_without_a_decision_stays_paused(tmp_path: Path) -> None:
    store, counts = MemorySessionStore(), tmp_path / "counts"
    calls = [("call_approve", "approver")]
    paused = await Scenario(store, counts).parent(calls).create_session(PARENT).run("go")
    again = await Scenario(store, counts).parent(calls).create_session(PARENT).resume()
    assert again is not None
    assert [a["id"] for a in again.pending_approvals] == [paused.pending_approvals[0]["id"]]
    assert lines(counts, "spawn approver") == ["spawn approver resumed=False"]


async def test_a_paused_parent_closed_by_a_new_run_is_settled_by_reconcile(
    tmp_path: Path,
) -> None:
    store, counts = MemorySessionStore(), tmp_path / "counts"
    calls = [("call_approve", "approver")]
    scenario = Scenario(store, counts)
    session = scenario.parent(calls).create_session(PARENT)
    paused = await session.run("go")
    child_session = paused.pending_approvals[0]["action"]["childSessionId"]
    await session.run("never mind")  # closes the paused run: run_ended
    assert await scenario.supervisor.reconcile(session) == [child_session]
    assert await scenario.supervisor.reconcile(session) == []
