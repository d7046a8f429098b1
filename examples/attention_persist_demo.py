"""Persisting the attention frontier across a restart (mock provider, no network).

With ``persistFrontier`` the session checkpoints its sticky frontier in the
JSONL session file. A new agent on the same file (what a restarted process
builds) resumes with the same stubs, so its first request keeps the cached
prefix instead of sending the old tool results in full again.

Run: .venv/bin/python examples/attention_persist_demo.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_agent
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.stores import create_jsonl_session_store
from prism.tools import define_tool

FILE = "def handle(request):\n    return route(request)\n" * 130  # ~6 KB
ATTENTION = {"maxInputTokens": 8000, "keepLast": 1, "persistFrontier": True}


def script(request: dict[str, Any]) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("Read it."), provider_done()]
    task = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"call_{task}", "read_file", {"n": task}), provider_done()]


def make_agent(path: Path) -> tuple[Any, Any]:
    provider = create_mock_provider(script)
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[define_tool("read_file", lambda args, ctx: FILE)],
        attention_compiler=ATTENTION,
        store=create_jsonl_session_store(path),
    )
    return agent, provider


def stubbed(messages: list[Any]) -> int:
    return sum(
        1
        for m in messages
        for b in m["content"]
        if b["type"] == "tool_result" and b["result"] != FILE
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        agent, provider = make_agent(path)
        session = agent.create_session(id="persist-demo")
        for task in range(4):
            await session.run(f"task {task}")
        before = provider.requests[-1]["messages"]
        print(f"before the restart: last request has {stubbed(before)} stubbed results")
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        checkpoints = [e for e in lines if e["kind"] == "custom"]
        print(
            f"session file: {len(checkpoints)} frontier checkpoint(s), e.g. {checkpoints[-1]['data']}"
        )

        # A new agent on the same file: what a restarted process would build.
        agent, provider = make_agent(path)
        resumed = await agent.open_session("persist-demo")
        # A raised gate that would not trip on this request: the stubs stay
        # because the restored frontier is sticky, not because the gate tripped.
        await resumed.run("task 4", attention={"triggerRatio": 0.98, "compactRatio": 0.99})
        first = provider.requests[0]["messages"]
        same = first[: len(before)] == before
        print(f"after the restart: first request has {stubbed(first)} stubbed results")
        print(f"cached prefix kept across the restart: {same}")


if __name__ == "__main__":
    anyio.run(main)
