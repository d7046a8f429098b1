"""Coding lifecycle events reach the run's event stream through
``ToolContext.emit`` (issue 27): in order between each call's ``tool_call``
and ``tool_result``, redacted with the agent's secrets like every event,
and in ``prism --mode json`` (a real process). Anything but a tool event
is refused inside the tool."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.image_samples import png_bytes

from prism.coding import create_coding_tools
from prism.providers import create_mock_provider, provider_done, provider_tool_call
from prism.runtime import create_agent
from prism.security import allow_command, allow_kinds, create_execution_policy, create_redactor
from prism.tools import ToolContext, ToolEventError, define_tool

pytestmark = pytest.mark.anyio
SECRET = "tok-9f8e7d6c5b4a"
PY = sys.executable


def scripted(calls: list[tuple[str, str, dict[str, Any]]]) -> Any:
    """Turn 1 makes ``calls``; turn 2 answers."""

    def script(request: Any) -> list[Any]:
        if any(m["role"] == "tool" for m in request["messages"]):
            return [provider_done()]
        return [*(provider_tool_call(*c) for c in calls), provider_done("tool_use")]

    return create_mock_provider(script)


def coding_agent(workspace: Path, calls: list[tuple[str, str, dict[str, Any]]]) -> Any:
    # Tools are built before the agent: the redactor comes from the same secrets.
    redactor = create_redactor([SECRET])
    policy = create_execution_policy(
        [workspace], [allow_command(PY, "..."), allow_kinds("write", "edit")], redactor=redactor
    )
    return create_agent(
        model={"provider": "mock", "model": "m"},
        provider=scripted(calls),
        tools=create_coding_tools(workspace, execution_policy=policy, redactor=redactor),
        secrets=[SECRET],
    )


async def test_lifecycle_events_stream_in_order_and_redacted(workspace: Path) -> None:
    calls = [
        ("c1", "shell", {"argv": [PY, "-c", "pass", SECRET]}),
        ("c2", "write", {"path": "notes.txt", "content": "hello\n"}),
        ("c3", "todo", {"todos": [{"content": "ship it", "status": "in_progress"}]}),
    ]
    session = coding_agent(workspace, calls).create_session("s")
    seen: list[dict[str, Any]] = []
    async with session.stream("go") as events:
        async for event in events:
            seen.append(event)
    tool_events = [
        (
            e["type"],
            e.get("toolCallId") or e.get("toolCall", {}).get("id") or e["result"]["toolCallId"],
        )
        for e in seen
        if e["type"]
        in (
            "tool_call",
            "tool_result",
            "command_started",
            "command_finished",
            "file_changed",
            "plan_changed",
        )
    ]
    assert tool_events == [
        ("tool_call", "c1"),
        ("command_started", "c1"),
        ("command_finished", "c1"),
        ("tool_result", "c1"),
        ("tool_call", "c2"),
        ("file_changed", "c2"),
        ("tool_result", "c2"),
        ("tool_call", "c3"),
        ("plan_changed", "c3"),
        ("tool_result", "c3"),
    ]
    run_id = seen[0]["runId"]
    lifecycle = [
        e for e in seen if e["type"] in ("command_started", "file_changed", "plan_changed")
    ]
    assert all(e["sessionId"] == "s" and e["runId"] == run_id for e in lifecycle)
    started = next(e for e in seen if e["type"] == "command_started")
    assert started["argv"][-1] == "[REDACTED]" and SECRET not in json.dumps(seen)
    changed = next(e for e in seen if e["type"] == "file_changed")
    assert (changed["path"], changed["kind"], changed["bytes"]) == ("notes.txt", "created", 6)


async def test_a_tool_may_emit_only_tool_events() -> None:
    def noisy(args: dict[str, Any], ctx: ToolContext) -> str:
        if args["kind"] == "runtime":
            ctx.emit({"type": "run_finished"})
        else:
            ctx.emit({"type": "file_changed", "path": "a", "kind": "created", "bytes": {1, 2}})
        return "emitted"

    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=scripted(
            [("r", "noisy", {"kind": "runtime"}), ("j", "noisy", {"kind": "not-json"})]
        ),
        tools=[define_tool("noisy", noisy)],
    )
    session = agent.create_session("s")
    seen: list[dict[str, Any]] = []
    async with session.stream("go") as events:
        async for event in events:
            seen.append(event)
    results = {e["result"]["toolCallId"]: e["result"] for e in seen if e["type"] == "tool_result"}
    assert (
        "may emit only command_finished, command_started, file_changed, plan_changed"
        in (results["r"]["value"]["message"])
    )
    assert "must be JSON data" in results["j"]["value"]["message"]
    assert [e["type"] for e in seen].count("run_finished") == 1
    assert not any(e["type"] == "file_changed" for e in seen)
    # Outside a run nobody listens: False, after the same check.
    assert ToolContext().emit({"type": "plan_changed", "todos": [], "counts": {}}) is False
    with pytest.raises(ToolEventError, match="got type 'error'"):
        ToolContext().emit({"type": "error"})


HOST = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
sys.path.insert(0, {root!r})
from test_tool_events_stream import coding_agent

def build():
    return coding_agent(
        Path({workspace!r}),
        [("c1", "write", {{"path": "n.txt", "content": "x"}}), ("c2", "read", {{"path": "p.png"}})],
    )
"""


def test_json_mode_shows_the_lifecycle_events(workspace: Path, tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    png = png_bytes(3, 2)
    (workspace / "p.png").write_bytes(png)
    tests = str(Path(__file__).parent)
    (app / "codingapp.py").write_text(
        HOST.format(tests=tests, root=str(Path(__file__).parents[2]), workspace=str(workspace))
    )
    env = {**os.environ, "PRISM_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join([str(app), env.get("PYTHONPATH", "")])
    prism = Path(sys.executable).parent / "prism"
    done = subprocess.run(
        [str(prism), "--agent", "codingapp:build", "--mode", "json", "-p", "go"],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    types = [event["type"] for event in events]
    assert types.index("tool_call") < types.index("file_changed") < types.index("tool_result")
    # An image result stays one small, valid JSON line: its data is elided.
    read = next(
        e["result"] for e in events if e["type"] == "tool_result" and e["result"]["name"] == "read"
    )
    assert read["images"] == [{"type": "image", "mimeType": "image/png", "dataLength": 100}]
    assert base64.b64encode(png).decode() not in done.stdout
