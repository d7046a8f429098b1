"""The crash-matrix scenario, shared by the child process and the tests.

A 6-turn durable session: turns 1-5 call tools (turn 3 calls two at once),
turn 6 answers. ``charge`` is not idempotent, ``lookup`` is; both append
one line per execution to a side file so the parent can count executions
across processes. Tool results are large enough that the attention gate
trips mid-run, so the frontier is non-empty by the end. The provider is a
pure function of the request (how many assistant turns it already holds),
so a resumed process continues the same conversation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}
SESSION = "crash"
BIG = "q" * 6000  # about 1500 tokens: the gate trips once a few are in the request
ATTENTION = {"maxInputTokens": 8000, "keepLast": 1}
PLAN: list[list[tuple[str, dict[str, Any]]]] = [
    [("charge", {"amount": 1})],
    [("lookup", {"key": "a"})],
    [("charge", {"amount": 2}), ("lookup", {"key": "b"})],
    [("lookup", {"key": "c"})],
    [("charge", {"amount": 3})],
]
IDEMPOTENT = {"charge": False, "lookup": True}


def script(request: Any) -> list[Any]:
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn < len(PLAN):
        calls = [
            provider_tool_call(f"call_{turn}_{j}", name, args)
            for j, (name, args) in enumerate(PLAN[turn])
        ]
        return [provider_text_delta(f"step {turn}"), *calls, provider_done()]
    return [provider_text_delta("all done"), provider_done()]


def count_line(path: Path, text: str) -> None:
    # O_APPEND + one write: the line is on disk before the tool returns, so
    # a kill right after it still counts the execution.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def make_agent(
    store: Any, counts: Path, on_tool: Any = None, provider: Any = None, **options: Any
) -> Agent:
    def tool(name: str) -> Any:
        def execute(args: dict[str, Any], ctx: Any) -> str:
            count_line(counts, f"{name} {ctx.tool_call_id}")
            if on_tool is not None:
                on_tool(name)
            return f"{name} {args} " + BIG

        return define_tool(name, execute, idempotent=IDEMPOTENT[name])

    return create_agent(
        model=MODEL,
        provider=provider or create_mock_provider(script),
        tools=[tool("charge"), tool("lookup")],
        attention_compiler=ATTENTION,
        store=store,
        durable=True,
        persist_session_state=True,
        max_tool_rounds=10,
        **options,
    )


def executions(counts: Path) -> dict[str, int]:
    """Executions per tool call id."""
    seen: dict[str, int] = {}
    if counts.exists():
        for line in counts.read_text().splitlines():
            _, call_id = line.split(" ", 1)
            seen[call_id] = seen.get(call_id, 0) + 1
    return seen


def comparable(entries: list[Any]) -> list[Any]:
    """The branch's messages without ids/timestamps: what must match an
    uninterrupted run (checkpoints differ by design: a resume adds its own)."""
    return [e["message"] for e in entries if e["kind"] == "message"]
