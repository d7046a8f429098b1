"""Delegation overhead: what a supervisor adds to running a child agent.

The child is the same agent in every variant: a model that answers at once
(no tool round, no recording), so what is timed is the harness, not the
model. Per round, interleaved so machine load hits all variants alike:

- ``bare``: ``agent.create_session(new id).run(task)``, a plain run;
- ``bare durable``: the same run with ``durable=True`` (a delegated child
  always runs durable, so it can be suspended and resumed);
- ``delegation``: one call of the supervisor's delegation tool (a new
  child session, its link entry, the durable run, the outcome entry, the
  lifecycle events, the bounded answer), invoked as dispatch invokes it.

The delegation overhead is ``delegation - bare`` (target: under 5 ms), on
the memory store and on a SQLite file (one transaction per append).

    python -m benches.subagent_overhead [--rounds 300] [--warm 50]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from prism.runtime import Agent, create_agent
from prism.stores import create_memory_session_store, create_sqlite_session_store
from prism.subagents import ChildSpec, create_supervisor
from prism.tools import ToolContext

MODEL = {"provider": "bench", "model": "answer"}


class AnswerProvider:
    """Answers every request with one short text, recording nothing."""

    name = "bench"

    def generate(self, request: Any) -> AsyncIterator[Any]:
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        yield {"type": "content_delta", "text": "found it in src/parse.py"}
        yield {"type": "done", "stopReason": "stop"}


def _variants(store: Any) -> dict[str, Callable[[int], Coroutine[Any, Any, Any]]]:
    child: Agent = create_agent(model=MODEL, provider=AnswerProvider(), store=store)
    supervisor = create_supervisor(children={"explorer": ChildSpec(lambda _ctx: child)})
    events: list[Any] = []

    async def bare(n: int) -> Any:
        return await child.create_session(f"bare-{n}").run("find the parser")

    async def bare_durable(n: int) -> Any:
        return await child.create_session(f"durable-{n}").run("find the parser", durable=True)

    async def delegation(n: int) -> Any:
        ctx = ToolContext(
            session_id="lead",
            run_id="run_bench",
            tool_call_id=f"call_{n}",
            store=store,
            emit=events.append,
        )
        value = supervisor.tool.execute({"child": "explorer", "task": "find the parser"}, ctx)
        events.clear()
        return await value  # type: ignore[misc]

    return {"bare": bare, "bare durable": bare_durable, "delegation": delegation}


def measure(store: Any, rounds: int, warm: int) -> dict[str, float]:
    loop = asyncio.new_event_loop()
    variants = _variants(store)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for n in range(warm):
        for run in variants.values():
            loop.run_until_complete(run(-1 - n))
    gc.collect()
    for n in range(rounds):
        for name, run in variants.items():
            started = time.perf_counter()
            loop.run_until_complete(run(n))
            samples[name].append((time.perf_counter() - started) * 1000)
    loop.close()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    minima = {f"{name} (min)": min(values) for name, values in samples.items()}
    return {**medians, **minima}


def count_writes(store: Any) -> dict[str, float]:
    """Store appends (one transaction each on SQLite) per call of each variant."""
    loop = asyncio.new_event_loop()
    variants = _variants(store)
    inner = store.append_many
    calls = 0

    async def counting(entries: Any) -> Any:
        nonlocal calls
        calls += 1
        return await inner(entries)

    store.append_many = counting
    writes: dict[str, float] = {}
    for name, run in variants.items():
        calls = 0
        for n in range(10):
            loop.run_until_complete(run(10_000 + n))
        writes[name] = calls / 10
    store.append_many = inner
    loop.close()
    return writes


def report(label: str, medians: dict[str, float], writes: dict[str, float]) -> None:
    bare = medians["bare"]
    print(f"\n{label}")
    print("| variant | median ms | median / bare | min ms | store writes |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, value in medians.items():
        if name in writes:
            low = medians[f"{name} (min)"]
            print(f"| {name} | {value:.3f} | {value / bare:.2f} | {low:.3f} | {writes[name]:g} |")
    overhead = medians["delegation"] - bare
    low = medians["delegation (min)"] - medians["bare (min)"]
    verdict = "met" if overhead < 5 else "NOT met"
    print(
        f"delegation overhead: median {overhead:.3f} ms, min {low:.3f} ms (target < 5 ms: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warm", type=int, default=50)
    args = parser.parse_args()
    memory = create_memory_session_store()
    report("memory store", measure(memory, args.rounds, args.warm), count_writes(memory))
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = create_sqlite_session_store(Path(tmp) / "bench.db")
        medians = measure(sqlite, args.rounds // 3, args.warm // 5)
        report("SQLite store", medians, count_writes(sqlite))


if __name__ == "__main__":
    main()
