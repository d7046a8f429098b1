"""A parent delegating to three children in parallel (one fails, one is
aborted, one waits for approval) pauses; a NEW process resumes it with the
approval and it finishes. A parent killed mid-delegation resumes in a new
process: the finished child is not re-run, the running one resumes from its
own checkpoints. Real subprocesses on a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from subagent_scenario import lines

import prism

CHILD = Path(__file__).parent / "subagent_child.py"
PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])


def run_child(tmp_path: Path, mode: str, decisions: Any = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(CHILD), str(tmp_path / "store.db"), str(tmp_path / "counts"), mode]
    if decisions is not None:
        argv.append(json.dumps(decisions))
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def child_json(tmp_path: Path, mode: str, decisions: Any = None) -> Any:
    done = run_child(tmp_path, mode, decisions)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_three_children_pause_and_a_new_process_finishes(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    first = child_json(tmp_path, "start")
    (approval,) = first["result"]["pendingApprovals"]
    # The child's approval surfaces on the parent's result, on the delegation.
    assert approval["toolCallId"] == "call_approve"
    assert approval["action"]["kind"] == "subagent"
    assert approval["action"]["child"] == "approver"
    (inner,) = approval["action"]["approvals"]
    assert inner["tool"] == "publish"
    outcomes = {
        e["child"]: e["outcome"] for e in first["events"] if e["type"] == "subagent_stopped"
    }
    assert outcomes == {"failer": "failure", "aborter": "abort", "approver": "suspended"}
    assert lines(counts, "tool publish") == []

    done = child_json(tmp_path, "resume", {approval["id"]: "approve"})
    assert "pendingApprovals" not in done["result"]
    report = json.loads(done["result"]["text"])
    assert report["call_fail"]["error"] is True
    assert "SubagentFailedError" in report["call_fail"]["result"]["message"]
    assert report["call_abort"]["error"] is True
    assert "stopped by the test" in report["call_abort"]["result"]["message"]
    answer = report["call_approve"]["result"]
    assert answer["outcome"] == "success"
    assert json.loads(answer["answer"].removeprefix("published ")) == {
        "publish_1": {"error": False, "result": "post-42"}
    }
    # Finished children were not re-run; the approved one resumed once.
    spawns = lines(counts, "spawn")
    assert sorted(spawns[:3]) == [
        "spawn aborter resumed=False",
        "spawn approver resumed=False",
        "spawn failer resumed=False",
    ]
    assert spawns[3:] == ["spawn approver resumed=True"]
    assert lines(counts, "tool publish") == ["tool publish"]
    assert lines(counts, "tool hang") == ["tool hang"]
    resumed = [e for e in done["events"] if e["type"] == "subagent_started"]
    assert [(e["child"], e["resumed"]) for e in resumed] == [("approver", True)]


def test_a_parent_killed_mid_delegation_resumes_its_children(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    killed = run_child(tmp_path, "kill")
    assert killed.returncode == -9, killed.stderr
    assert lines(counts, "tool step") == ["tool step"]

    done = child_json(tmp_path, "kill-resume")
    report = json.loads(done["result"]["text"])
    assert report["call_quick"]["result"]["answer"].startswith("quick answer")
    worker = report["call_worker"]["result"]
    assert worker["outcome"] == "success"
    # The worker resumed from its own checkpoint: its started, unfinished
    # step is answered "interrupted", never run twice.
    step = json.loads(worker["answer"].removeprefix("worked "))["step_1"]
    assert step["error"] is True and step["result"]["code"] == "interrupted"
    assert lines(counts, "tool step") == ["tool step"]
    assert lines(counts, "spawn quick") == ["spawn quick resumed=False"]
    assert lines(counts, "spawn worker") == [
        "spawn worker resumed=False",
        "spawn worker resumed=True",
    ]
