"""The approval scenario, shared by the child process and the tests.

A durable support-agent run: turn 1 calls ``refund`` (needs approval, not
idempotent) and ``lookup`` (no approval, idempotent) in one round; turn 2
answers with what the refund returned. Both tools append one line per
execution to a side file, so executions are counted across processes. The
provider is a pure function of the request, so a resumed process (any
process) continues the same conversation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from prism.approvals import requires_approval
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}
SESSION = "ticket-17"
SECRET = "sk-live-0123456789abcdef"


def script(request: Any) -> list[Any]:
    messages = request["messages"]
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if turn == 0:
        return [
            provider_text_delta("refunding"),
            provider_tool_call("call_refund", "refund", {"order": "A-17", "cents": 1250}),
            provider_tool_call("call_lookup", "lookup", {"order": "A-17"}),
            provider_done(),
        ]
    results = [
        block
        for m in messages
        if m["role"] == "tool"
        for block in m["content"]
        if block.get("toolCallId") == "call_refund"
    ]
    last = results[-1] if results else {}
    outcome = json.dumps({"error": bool(last.get("isError")), "result": last.get("result")})
    return [provider_text_delta(f"refund outcome: {outcome}"), provider_done()]


def count_line(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def executions(path: Path, tool: str) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.startswith(tool + " ")]


def make_agent(
    store: Any, counts: Path, on_tool: Any = None, provider: Any = None, **options: Any
) -> Agent:
    def refund(args: dict[str, Any], ctx: Any) -> str:
        count_line(counts, f"refund {ctx.tool_call_id} {args['cents']}")
        if on_tool is not None:
            on_tool("refund")
        return f"refunded {args['cents']} cents on {args['order']}"

    def lookup(args: dict[str, Any], ctx: Any) -> str:
        count_line(counts, f"lookup {ctx.tool_call_id}")
        return f"order {args['order']}: paid"

    schema = {
        "type": "object",
        "properties": {"order": {"type": "string"}, "cents": {"type": "integer", "minimum": 1}},
        "required": ["order", "cents"],
    }
    return create_agent(
        model=MODEL,
        provider=provider or create_mock_provider(script),
        tools=[
            requires_approval(define_tool("refund", refund, parameters=schema)),
            define_tool("lookup", lookup, idempotent=True),
        ],
        store=store,
        **{"durable": True, **options},
    )
