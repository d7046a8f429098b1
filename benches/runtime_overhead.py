"""Per-turn harness overhead over a 300-turn session (issue 3).

Each turn: user prompt -> the model calls a tool -> the tool returns a 2 KB
string -> the model answers with text. The model is a scripted function (no
network, no tokens), so what is measured is the harness: input assembly,
event/tool plumbing and history bookkeeping. Prism uses the memory store.
The same scenario runs on pydantic-ai (``FunctionModel``) and openai-agents
(a fake ``Model``) when they are installed (``pip install -e .[bench]``).

    python -m benches.runtime_overhead [--turns 300] [--json out.json]

``--durable`` instead compares a durable run (checkpoints at every step,
issue 16) with a plain one on the memory store at 1,200 messages
(alternating single turns, same process) and counts store writes per step
on a JSONL file.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

PAYLOAD = "x" * 2048
WINDOWS: dict[str, tuple[int, int]] = {
    "turns 1-10": (1, 10),
    "turns ~100 (95-105)": (95, 105),
    "turns ~250 (245-255)": (245, 255),
    "turns 280-300": (280, 300),
}


# --- prism ------------------------------------------------------------------------


class FunctionProvider:
    """A function model for Prism: tool call first, text once the tool answered.

    Unlike ``create_mock_provider`` it does not deep-copy every request into
    ``.requests`` (that recording is O(history) per turn and would dominate
    a harness-overhead measurement)."""

    name = "bench"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, request: Any) -> AsyncIterator[Any]:
        return self._events(request)

    async def _events(self, request: Any) -> AsyncIterator[Any]:
        self.calls += 1
        last = request["messages"][-1]
        if last["role"] == "tool":
            yield {"type": "content_delta", "text": "done"}
        else:
            yield {
                "type": "tool_call",
                "toolCall": {"id": f"call_{self.calls}", "name": "lookup", "arguments": {"n": 1}},
            }
        yield {"type": "done", "stopReason": "stop"}


def _prism_agent(store: Any = None, *, durable: bool = False, idempotent: bool = False) -> Any:
    from prism import create_memory_session_store
    from prism.runtime import create_agent
    from prism.tools import define_tool

    return create_agent(
        model={"provider": "bench", "model": "function"},
        provider=FunctionProvider(),
        tools=[
            define_tool(
                "lookup", lambda args, ctx: PAYLOAD, description="Look it up", idempotent=idempotent
            )
        ],
        store=store if store is not None else create_memory_session_store(),
        durable=durable,
    )


async def prism_turns(turns: int) -> list[float]:
    agent = _prism_agent()
    session = agent.create_session("bench")
    timings: list[float] = []
    for n in range(turns):
        start = time.perf_counter()
        await session.run(f"prompt {n}")
        timings.append((time.perf_counter() - start) * 1000)
    messages = await session.messages()
    assert len(messages) == 4 * turns, len(messages)
    return timings


# --- pydantic-ai --------------------------------------------------------------------


async def pydantic_ai_turns(turns: int) -> list[float]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"n": 1})])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def lookup(n: int) -> str:
        """Look it up."""
        return PAYLOAD

    history: list[Any] = []
    timings: list[float] = []
    for n in range(turns):
        start = time.perf_counter()
        result = await agent.run(f"prompt {n}", message_history=history)
        history = result.all_messages()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


# --- openai-agents ---------------------------------------------------------------------


def _openai_agents_model() -> Any:
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class FakeModel(Model):
        def __init__(self) -> None:
            self.calls = 0

        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> Any:
            self.calls += 1
            last = input[-1] if isinstance(input, list) else {}
            kind = last.get("type") if isinstance(last, dict) else getattr(last, "type", None)
            if kind == "function_call_output":
                output: list[Any] = [
                    ResponseOutputMessage(
                        id=f"msg_{self.calls}",
                        content=[
                            ResponseOutputText(annotations=[], text="done", type="output_text")
                        ],
                        role="assistant",
                        status="completed",
                        type="message",
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        arguments='{"n": 1}',
                        call_id=f"call_{self.calls}",
                        name="lookup",
                        type="function_call",
                        id=f"fc_{self.calls}",
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return FakeModel()


async def openai_agents_turns(turns: int) -> list[float]:
    from agents import Agent, RunConfig, Runner, function_tool

    @function_tool
    def lookup(n: int) -> str:
        """Look it up."""
        return PAYLOAD

    agent = Agent(name="bench", model=_openai_agents_model(), tools=[lookup])
    config = RunConfig(tracing_disabled=True)
    history: list[Any] = []
    timings: list[float] = []
    for n in range(turns):
        start = time.perf_counter()
        result = await Runner.run(
            agent, [*history, {"role": "user", "content": f"prompt {n}"}], run_config=config
        )
        history = result.to_input_list()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


# --- durable runs (issue 16) ------------------------------------------------------------


async def durable_overhead(warm_turns: int = 300, rounds: int = 300) -> dict[str, Any]:
    """Per-turn wall time of a durable vs a plain run at ``4 * warm_turns``
    messages on the memory store (alternating turns, so both see the same
    machine load), and store writes per step on JSONL."""
    variants = {
        "plain": {"durable": False},
        "durable": {"durable": True},
        "durable, idempotent tool": {"durable": True, "idempotent": True},
    }
    sessions = {}
    for name, options in variants.items():
        session = _prism_agent(**options).create_session("bench")
        for n in range(warm_turns):
            await session.run(f"warm {n}")
        sessions[name] = session
    timings: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for n in range(rounds):
        # Rotate the order so no variant always runs right after another.
        for name in names[n % 3 :] + names[: n % 3]:
            gc.collect(0)
            start = time.perf_counter()
            await sessions[name].run(f"prompt {n}")
            timings[name].append((time.perf_counter() - start) * 1000)
    plain_median = statistics.median(timings["plain"])
    plain_min = min(timings["plain"])
    return {
        "messages": 4 * warm_turns,
        "memory": {
            name: {
                "min_ms": round(min(values), 4),
                "median_ms": round(statistics.median(values), 4),
                "min_ratio": round(min(values) / plain_min, 2),
                "median_ratio": round(statistics.median(values) / plain_median, 2),
            }
            for name, values in timings.items()
        },
        "jsonl": {
            "plain": await _jsonl_writes(durable=False, idempotent=False),
            "durable": await _jsonl_writes(durable=True, idempotent=False),
            "durable, idempotent tool": await _jsonl_writes(durable=True, idempotent=True),
        },
    }


async def _jsonl_writes(*, durable: bool, idempotent: bool, turns: int = 20) -> dict[str, Any]:
    """Writes (``append_many`` calls, one ``write`` each) and checkpoints
    (step boundaries) per turn on a JSONL file."""
    import tempfile

    from prism.stores.jsonl import JsonlSessionStore

    writes = 0

    class Counting(JsonlSessionStore):
        async def append_many(self, entries: Any) -> None:
            nonlocal writes
            writes += 1
            await super().append_many(entries)

    with tempfile.TemporaryDirectory() as directory:
        store = Counting(f"{directory}/bench.jsonl")
        session = _prism_agent(store, durable=durable, idempotent=idempotent).create_session("b")
        for n in range(turns):
            await session.run(f"prompt {n}")
        steps = sum(1 for e in await session.entries() if e.get("customType") == "prism.checkpoint")
    return {"writes_per_turn": writes / turns, "steps_per_turn": steps / turns}


def render_durable(result: dict[str, Any]) -> str:
    lines = [
        f"durable vs plain run, memory store, {result['messages']} messages of history",
        "| run | min ms | median ms | min / plain | median / plain |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result["memory"].items():
        lines.append(
            f"| {name} | {row['min_ms']:.3f} | {row['median_ms']:.3f} | {row['min_ratio']}"
            f" | {row['median_ratio']} |"
        )
    lines += [
        "",
        "JSONL store, per turn (user -> tool call -> tool result -> answer)",
        "| run | writes | steps (checkpoints) | writes per step |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, row in result["jsonl"].items():
        steps = row["steps_per_turn"]
        per_step = f"{row['writes_per_turn'] / steps:.2f}" if steps else "-"
        lines.append(f"| {name} | {row['writes_per_turn']:.1f} | {steps:.1f} | {per_step} |")
    return "\n".join(lines)


# --- reporting -------------------------------------------------------------------------

HARNESSES: dict[str, Callable[[int], Awaitable[list[float]]]] = {
    "prism": prism_turns,
    "pydantic-ai": pydantic_ai_turns,
    "openai-agents": openai_agents_turns,
}


def window_medians(timings: list[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for label, (first, last) in WINDOWS.items():
        chunk = timings[first - 1 : last]
        out[label] = round(statistics.median(chunk), 4) if chunk else None
    return out


async def measure(turns: int, harnesses: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in harnesses:
        gc.collect()
        try:
            timings = await HARNESSES[name](turns)
        except ImportError as error:
            results[name] = {"skipped": f"not installed: {error.name}"}
            continue
        medians = window_medians(timings)
        first, last = medians["turns 1-10"], medians["turns 280-300"]
        results[name] = {
            "medians_ms": medians,
            "last_over_first": round(last / first, 2) if first and last else None,
            "total_s": round(sum(timings) / 1000, 2),
        }
    return results


def render(results: dict[str, Any], turns: int) -> str:
    labels = list(WINDOWS)
    lines = [
        f"per-turn wall time, median ms ({turns} turns, 4 messages per turn)",
        "| harness | " + " | ".join(labels) + " | last/first |",
        "| --- |" + " ---: |" * (len(labels) + 1),
    ]
    for name, result in results.items():
        if "skipped" in result:
            lines.append(
                f"| {name} | " + " | ".join("-" for _ in labels) + f" | {result['skipped']} |"
            )
            continue
        cells = [
            "-" if result["medians_ms"][label] is None else f"{result['medians_ms'][label]:.3f}"
            for label in labels
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {result['last_over_first']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--only", choices=sorted(HARNESSES), action="append")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--durable", action="store_true", help="durable vs plain runs instead")
    args = parser.parse_args(argv)
    if args.durable:
        durable = anyio.run(durable_overhead)
        print(render_durable(durable))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(durable, handle, indent=2)
        return 0
    results = anyio.run(measure, args.turns, args.only or list(HARNESSES))
    print(render(results, args.turns))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"turns": args.turns, "results": results}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
