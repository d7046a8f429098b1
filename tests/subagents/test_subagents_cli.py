"""``prism --mode json`` shows a supervisor's lifecycle events: a host agent
(``--agent``) delegating to a child, through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.conftest import SAFETY_TIMEOUT, prism_executable

import prism

PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])

HOST_APP = """
from prism.providers import create_mock_provider, provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.subagents import ChildSpec, create_supervisor

MODEL = {"provider": "mock", "model": "m"}


def lead(request):
    if not any(m["role"] == "tool" for m in request["messages"]):
        call = provider_tool_call("c1", "delegate", {"child": "explorer", "task": "map the repo"})
        return [call, provider_done("tool_use")]
    return [provider_text_delta("explorer said: done"), provider_done("stop")]


def explorer(_ctx):
    provider = create_mock_provider([provider_text_delta("mapped"), provider_done()])
    return create_agent(model=MODEL, provider=provider)


def build():
    supervisor = create_supervisor(children={"explorer": ChildSpec(explorer, "maps code")})
    return create_agent(model=MODEL, provider=create_mock_provider(lead), tools=[supervisor.tool])
"""


def test_json_mode_streams_subagent_events(tmp_path: Path) -> None:
    (tmp_path / "leadapp.py").write_text(HOST_APP)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PRISM_HOME=str(tmp_path / "home"), PYTHONPATH=PYTHON_DIR)
    done = subprocess.run(
        [str(prism_executable()), "--agent", "leadapp:build", "--mode", "json", "-p", "go"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    started = events[kinds.index("subagent_started")]
    stopped = events[kinds.index("subagent_stopped")]
    assert kinds.index("tool_call") < kinds.index("subagent_started")
    assert kinds.index("subagent_stopped") < kinds.index("tool_result")
    assert (started["child"], started["task"], started["toolCallId"]) == (
        "explorer",
        "map the repo",
        "c1",
    )
    assert (stopped["outcome"], stopped["delegationId"]) == ("success", started["delegationId"])
    (result,) = [e["result"] for e in events if e["type"] == "tool_result"]
    assert result["value"]["answer"] == "mapped"
