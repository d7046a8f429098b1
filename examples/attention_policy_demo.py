"""The attention recipe for a long session: the gate plus compaction, the
proactive policy, and a host summarizer (mock provider, no network).

Twelve tasks each read a 12 KB file into a 40k-token window. The default
policy changes nothing under the trigger and, when it trips, reduces every
eligible row at once, so the prompt cache breaks once, not every turn.
The proactive policy acts earlier, at tool results, when the saving pays
for the cache rewrite. A ``tool_result_fold`` summary replaces the digest
stub, and is asked once per tool call.

Run: .venv/bin/python examples/attention_policy_demo.py
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio

from prism import create_agent
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.tools import define_tool

FILE = "def handle(request):\n    return route(request)\n" * 260  # ~12 KB
MODEL = {"provider": "mock", "model": "demo", "limits": {"contextWindow": 40_000}}


def script(request: dict[str, Any]) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("Read it; the handler just routes."), provider_done()]
    task = sum(1 for m in request["messages"] if m["role"] == "user")
    return [
        provider_thinking_delta(f"Task {task}: read the module first. " * 20),
        provider_tool_call(f"call_{task}", "read_file", {"path": f"src/mod_{task}.py"}),
        provider_done(),
    ]


def busts(requests: list[dict[str, Any]]) -> int:
    """Requests whose previous request is not a prefix of them."""
    return sum(
        1
        for before, after in itertools.pairwise(requests)
        if after["messages"][: len(before["messages"])] != before["messages"]
    )


async def run(name: str, attention: Any) -> None:
    provider = create_mock_provider(script)
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[define_tool("read_file", lambda args, ctx: FILE)],
        attention_compiler=attention,
        # The recipe: the gate first, compaction only when it cannot keep up.
        compaction={"trigger": {"type": "input_ratio", "ratio": 0.9}},
    )
    session = agent.create_session(id=name)
    for task in range(1, 13):
        await session.run(f"Look at module {task}")
    sizes = [sum(len(str(m)) for m in r["messages"]) // 4 for r in provider.requests]
    print(
        f"{name:<10} requests {len(sizes)}, peak ~{max(sizes):,} tokens, "
        f"total ~{sum(sizes):,} tokens, cache busts {busts(provider.requests)}"
    )


async def main() -> None:
    await run("default", True)  # policy "deep": nothing under the trigger, deep trips
    await run("reference", {"policy": "reference"})  # the original: just under the trigger
    await run("proactive", {"policy": "proactive", "proactiveFloor": 0.25})

    calls: list[str] = []

    def summarize(block: dict[str, Any]) -> str:
        calls.append(block["toolCallId"])
        return f"{block['name']}: a 260-line module whose handle() just routes"

    provider = create_mock_provider(script)
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[define_tool("read_file", lambda args, ctx: FILE)],
        attention_compiler={"tool_result_fold": summarize},
    )
    session = agent.create_session()
    for task in range(1, 13):
        await session.run(f"Look at module {task}")
    folded = [
        b["result"]
        for m in provider.requests[-1]["messages"]
        for b in m["content"]
        if b["type"] == "tool_result" and b["result"] != FILE
    ]
    print(f"fold: {len(folded)} summaries in the last request, e.g. {folded[0]!r}")
    print(f"fold: summarizer called {len(calls)} times for {len(set(calls))} tool calls")


if __name__ == "__main__":
    anyio.run(main)
