"""Child process of the coding-state checkpoint test: a durable run whose
todo list changes, then a tool that SIGKILLs the process (``start``); or
the resume of that run in a fresh process with a fresh, empty
``CodingState`` (``resume``), printing the restored state as JSON.

    coding_state_child.py SESSION_FILE WORKSPACE start|resume
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from prism.coding import CodingToolSet, create_coding_tools
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.security import NOOP_REDACTOR
from prism.stores.jsonl import JsonlSessionStore
from prism.tools import define_tool

SESSION = "job"
TODOS = [
    {"content": "write the fix", "status": "in_progress"},
    {"content": "run the tests", "status": "pending"},
]


def script(request: Any) -> list[Any]:
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        arguments = {"todos": TODOS, "next_check": "pytest -q"}
        return [provider_tool_call("c1", "todo", arguments), provider_done("tool_use")]
    if turn == 1:
        return [provider_tool_call("c2", "crash", {}), provider_done("tool_use")]
    return [provider_text_delta("done"), provider_done()]


def crash(args: dict[str, Any], ctx: Any) -> str:
    if os.environ.get("CODING_STATE_CRASH") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def build(session_file: str, workspace: str, *, carry: bool = True) -> tuple[Agent, CodingToolSet]:
    tools = create_coding_tools(workspace, redactor=NOOP_REDACTOR)
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(script),
        tools=[*tools, define_tool("crash", crash)],
        store=JsonlSessionStore(session_file),
        durable=True,
        checkpoint_state=[tools.state] if carry else [],
    )
    return agent, tools


def main() -> None:
    session_file, workspace, mode = sys.argv[1:4]
    agent, tools = build(session_file, workspace)
    session = agent.create_session(SESSION)
    if mode == "start":
        session.run_sync("fix the bug")
        raise SystemExit("the crash tool did not kill the process")
    result = session.resume_sync()
    assert result is not None
    print(json.dumps({"state": tools.state.for_session(SESSION), "text": result.text}))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
