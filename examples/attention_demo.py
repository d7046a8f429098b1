"""The attention compiler in a real session (mock provider, no network).

A coding agent reads a 12 KB file per task. With a 10k-token input cap the
gate trips after a few tasks: old thinking is stripped and old tool results
become digest stubs in the *request*; the session store keeps every byte.

Run: .venv/bin/python examples/attention_demo.py
"""

from __future__ import annotations

from typing import Any

import anyio

from prism import create_agent
from prism.attention import create_attention_truncation_trigger
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.tools import define_tool

FILE = "def handle(request):\n    return route(request)\n" * 260  # ~12 KB


def script(request: dict[str, Any]) -> list[Any]:
    """Think and read a file for a new task; answer once the result is in."""
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("Read it; the handler just routes."), provider_done()]
    task = sum(1 for m in request["messages"] if m["role"] == "user")
    return [
        provider_thinking_delta(f"Task {task}: I should read the module first. " * 20),
        provider_tool_call(f"call_{task}", "read_file", {"path": f"src/mod_{task}.py"}),
        provider_done(),
    ]


async def main() -> None:
    provider = create_mock_provider(script)
    truncation = create_attention_truncation_trigger(threshold=3)
    agent = create_agent(
        model={"provider": "mock", "model": "demo", "limits": {"contextWindow": 12_000}},
        provider=provider,
        tools=[define_tool("read_file", lambda args, ctx: FILE)],
        # Trip at 0.75 of the cap; once tripped, shrink to 0.5 (hysteresis).
        attention_compiler={"triggerRatio": 0.75, "targetRatio": 0.5, "keepLast": 1},
        compaction={"trigger": truncation.trigger},
    )
    session = agent.create_session(id="attention-demo")

    def on_event(event: dict[str, Any]) -> None:
        truncation.observe(event)
        if event["type"] == "attention_compiled":
            print(
                f"  attention_compiled: {event['used']} -> {event['usedAfter']} tokens "
                f"(cap {event['inputCap']}), thinking turns dropped "
                f"{event['droppedThinkingTurns']}, tool results stubbed "
                f"{event['stubbedToolResults']}, truncated={event['truncated']}"
            )

    session.subscribe(on_event)
    for task in range(1, 6):
        print(f"task {task}")
        await session.run(f"Look at module {task}")

    last = provider.requests[-1]["messages"]
    stubs = [
        b["result"]
        for m in last
        for b in m["content"]
        if b["type"] == "tool_result" and b["result"] != FILE
    ]
    print(f"last request: {len(stubs)} stubbed tool results, e.g.\n  {stubs[0]}")
    stored = [e["message"] for e in await session.entries() if e["kind"] == "message"]
    full = sum(1 for m in stored for b in m["content"] if b.get("result") == FILE)
    print(f"session store: {full} full tool results kept (never rewritten)")


if __name__ == "__main__":
    anyio.run(main)
