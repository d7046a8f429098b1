"""Child process for the crash-matrix cases of issue 34: runs one scenario
on a JSONL session file and SIGKILLs itself right after its Nth store write
(deterministic: a hook in the store, no timers).

    joins_child.py SCENARIO PATH COUNTS N

N is a write number, or ``next``: the write that stores the user message
"next" (the second run's input).

``rounds``: a durable run with ``max_tool_rounds=4`` whose model calls a
tool every turn. ``output``: a durable run asking for structured output
through the ``final_result`` tool, after one ``lookup`` round. ``dropped``:
a durable stream is dropped while its tool runs, then the next run starts
(and calls ``lookup`` once) on the same session.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio
from durable_scenario import count_line
from pydantic import BaseModel

from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.stores.jsonl import JsonlSessionStore
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}
SESSION = "joins"


class Answer(BaseModel):
    city: str
    population: int


def rounds_script(request: Any) -> list[Any]:
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    return [provider_tool_call(f"call_{turn}", "lookup", {"n": turn}), provider_done()]


def output_script(request: Any) -> list[Any]:
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        return [provider_tool_call("call_0", "lookup", {"n": 0}), provider_done()]
    arguments = {"city": "Oslo", "population": 700000 + turn}
    return [provider_tool_call(f"call_{turn}", "final_result", arguments), provider_done()]


def dropped_script(request: Any) -> list[Any]:
    last_user = [m for m in request["messages"] if m["role"] == "user"][-1]
    if last_user["content"][0]["text"] == "first":
        return [provider_tool_call("call_slow", "slow", {}), provider_done()]
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("all done"), provider_done()]
    return [provider_tool_call("call_next", "lookup", {"n": 1}), provider_done()]


SCRIPTS = {"rounds": rounds_script, "output": output_script, "dropped": dropped_script}


def make_agent(
    scenario: str, store: Any, counts: Path, script: Any = None, *, parent: bool = False
) -> Agent:
    def lookup(args: dict[str, Any], ctx: Any) -> str:
        count_line(counts, f"lookup {ctx.tool_call_id}")
        return f"looked up {args}"

    async def slow(args: dict[str, Any], ctx: Any) -> str:
        count_line(counts, f"slow {ctx.tool_call_id}")
        if parent:  # never to run again after the crash: fail loudly, never hang
            raise RuntimeError("the dropped run's tool ran again")
        await anyio.sleep_forever()
        return "never"

    return create_agent(
        model=MODEL,
        provider=create_mock_provider(script or SCRIPTS[scenario]),
        tools=[define_tool("lookup", lookup), define_tool("slow", slow)],
        store=store,
        durable=True,
        max_tool_rounds=4,
    )


async def scenario_run(scenario: str, agent: Agent) -> None:
    session = agent.create_session(SESSION)
    if scenario == "output":
        await session.run("find it", output_type=Answer)
    elif scenario == "rounds":
        await session.run("loop")
    else:
        async for event in session.stream("first"):
            if event["type"] == "tool_call":
                break  # dropped while its tool runs
        await session.run("next")


def main() -> None:
    scenario, path, counts, kill = sys.argv[1:5]
    target = int(kill) if kill.isdigit() else 0
    writes = 0

    def holds_next(entries: Any) -> bool:
        return any(
            e.get("message", {}).get("role") == "user"
            and e["message"]["content"][0].get("text") == "next"
            for e in entries
        )

    class Jsonl(JsonlSessionStore):
        async def append_many(self, entries: Any) -> None:
            nonlocal writes
            await super().append_many(entries)
            writes += 1
            if writes == target or (kill == "next" and holds_next(entries)):
                os.kill(os.getpid(), signal.SIGKILL)

    agent = make_agent(scenario, Jsonl(path), Path(counts))
    anyio.run(scenario_run, scenario, agent)


if __name__ == "__main__":
    main()
