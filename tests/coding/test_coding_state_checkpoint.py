"""``state.coding`` rides in durable checkpoints (issue 27): a run whose
todo list changed is SIGKILLed in a real subprocess, and a fresh process
(with a fresh, empty ``CodingState``) resumes it with the plan restored
before anything runs. A damaged ``state.coding`` is a warning, never a
failed resume; bad ``checkpoint_state`` options are refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from coding_state_child import SESSION, TODOS, build

from prism.errors import ConfigError
from prism.providers import create_mock_provider, provider_done
from prism.runtime import create_agent

CHILD = Path(__file__).parent / "coding_state_child.py"


def child(
    session_file: Path, workspace: Path, mode: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(session_file), str(workspace), mode],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def checkpoints(session_file: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    return [e["data"] for e in entries if e.get("customType") == "prism.checkpoint"]


def test_a_killed_run_resumes_with_its_plan(workspace: Path, tmp_path: Path) -> None:
    session_file = tmp_path / "sessions.jsonl"
    killed = child(session_file, workspace, "start", CODING_STATE_CRASH="1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    newest = checkpoints(session_file)[-1]
    assert newest["phase"] == "tool_start"
    assert newest["state"]["coding"] == {"todos": TODOS, "nextCheck": "pytest -q"}
    damaged = tmp_path / "damaged.jsonl"
    shutil.copy(session_file, damaged)

    resumed = child(session_file, workspace, "resume")
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out == {"state": {"todos": TODOS, "nextCheck": "pytest -q"}, "text": "done"}

    # The same run with state.coding damaged: a checkpoint_warning, and the
    # run goes on without the plan.
    lines = damaged.read_text().splitlines()
    last = json.loads(lines[-1])
    last["data"]["state"]["coding"]["todos"] = "not a list"
    damaged.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    agent, tools = build(str(damaged), str(workspace))
    warnings: list[dict[str, Any]] = []
    session = agent.create_session(SESSION)
    session.subscribe(lambda e: warnings.append(e) if e["type"] == "checkpoint_warning" else None)
    result = session.resume_sync()
    assert result is not None and result.text == "done"
    assert [(w["field"], w["message"]) for w in warnings] == [
        ("state.coding", "could not be restored (CodingToolError); dropped")
    ]
    assert tools.state.for_session(SESSION) == {"todos": []}


class Holder:
    def __init__(self, key: Any) -> None:
        self.state_key = key

    def for_session(self, session_id: str | None) -> dict[str, Any]:
        return {}

    def restore(self, session_id: str | None, data: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Holder("coding"), "must be a list"),
        ([object()], "need state_key, for_session"),
        ([Holder(3)], "need state_key"),
        ([Holder("Not A Key")], "must look like 'coding'"),
        ([Holder("coding"), Holder("coding")], "'coding' is given twice"),
    ],
)
def test_bad_checkpoint_state_is_refused(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_agent(
            model={"provider": "mock", "model": "m"},
            provider=create_mock_provider([provider_done()]),
            checkpoint_state=value,
        )
