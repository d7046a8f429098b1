"""A run pauses for approval in one process; NEW processes resume it with
decisions, on JSONL, SQLite and PostgreSQL (the throwaway server). The
approved refund happens exactly once, also when the resuming process is
SIGKILLed inside it and the run is resumed once more."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from approval_scenario import executions

import prism

CHILD = Path(__file__).parent / "approval_child.py"
PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])
STORES = ["jsonl", "sqlite", "postgres"]


class Child:
    def __init__(self, kind: str, location: str, counts: Path) -> None:
        self.kind, self.location, self.counts = kind, location, counts

    def run(
        self, mode: str, decisions: dict[str, Any] | None = None
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(CHILD), self.kind, self.location, str(self.counts), mode]
        if decisions is not None:
            argv.append(json.dumps(decisions))
        env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    def result(self, mode: str, decisions: dict[str, Any] | None = None) -> Any:
        done = self.run(mode, decisions)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(params=STORES)
def child(request: pytest.FixtureRequest, tmp_path: Path) -> Child:
    kind = request.param
    if kind == "postgres":
        location = request.getfixturevalue("pg_dsn")
    else:
        location = str(tmp_path / f"store.{kind}")
    return Child(kind, location, tmp_path / "counts")


def start_paused(child: Child) -> str:
    paused = child.result("start")
    (approval,) = paused["pendingApprovals"]
    assert approval["tool"] == "refund"
    assert approval["toolCallId"] == "call_refund"
    assert approval["arguments"] == {"order": "A-17", "cents": 1250}
    assert approval["reason"] == "tool 'refund' needs approval"
    # The other call of the round completed; the refund did not run.
    assert executions(child.counts, "lookup") == ["lookup call_lookup"]
    assert executions(child.counts, "refund") == []
    return str(approval["id"])


def test_a_new_process_approves_and_the_refund_happens_once(child: Child) -> None:
    approval = start_paused(child)
    # A restart without decisions: still pending, nothing ran.
    again = child.result("resume")
    assert [a["id"] for a in again["pendingApprovals"]] == [approval]
    assert executions(child.counts, "refund") == []

    done = child.result("resume", {approval: "approve"})
    assert "pendingApprovals" not in done
    assert json.loads(done["text"].removeprefix("refund outcome: ")) == {
        "error": False,
        "result": "refunded 1250 cents on A-17",
    }
    assert executions(child.counts, "refund") == ["refund call_refund 1250"]
    assert executions(child.counts, "lookup") == ["lookup call_lookup"]

    # The same decision again: a clear error, nothing runs twice.
    twice = child.run("resume", {approval: "approve"})
    assert twice.returncode != 0
    assert "was already decided" in twice.stderr
    assert executions(child.counts, "refund") == ["refund call_refund 1250"]


def test_a_denied_refund_never_runs_and_the_model_reads_why(child: Child) -> None:
    approval = start_paused(child)
    done = child.result("resume", {approval: {"deny": "over the agent's limit"}})
    outcome = json.loads(done["text"].removeprefix("refund outcome: "))
    assert outcome["error"] is True
    assert outcome["result"]["code"] == "policy_denied"
    assert "over the agent's limit" in outcome["result"]["message"]
    assert executions(child.counts, "refund") == []


def test_an_edited_refund_runs_with_the_edited_arguments(child: Child) -> None:
    approval = start_paused(child)
    done = child.result("resume", {approval: {"edit": {"order": "A-17", "cents": 500}}})
    assert "refunded 500 cents" in done["text"]
    assert executions(child.counts, "refund") == ["refund call_refund 500"]


def test_killed_inside_the_approved_refund_it_is_never_run_again(child: Child) -> None:
    approval = start_paused(child)
    killed = child.run("resume-kill", {approval: "approve"})
    assert killed.returncode == -signal.SIGKILL
    assert executions(child.counts, "refund") == ["refund call_refund 1250"]

    done = child.result("resume")
    outcome = json.loads(done["text"].removeprefix("refund outcome: "))
    assert outcome["error"] is True
    assert outcome["result"]["code"] == "interrupted"
    assert executions(child.counts, "refund") == ["refund call_refund 1250"]
