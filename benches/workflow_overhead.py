"""What a durable workflow costs per step (issue 30; target: under 2 ms over
the step's own work, on a JSONL store).

A workflow of one plain step that loops back to itself through a gate
(``loop(work, max=N)``), so a run executes 2N steps, each recorded (one
JSONL append per step boundary; ``begin`` + ``done`` for a non-idempotent
step). The baseline calls the same step functions directly in the same
loop, interleaved run by run so both see the same machine load. Each step
does a little real work (hashing 4 KB) so "the step's own work" is not zero.

    python -m benches.workflow_overhead [--steps N] [--runs R]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from prism.stores import SessionStore, create_jsonl_session_store, create_memory_session_store
from prism.workflows import END, Workflow, loop, run_workflow

PAYLOAD = b"x" * 4096


def work_unit(n: int) -> int:
    return n + hashlib.sha256(PAYLOAD).digest()[0] % 2


def build(steps: int, idempotent: bool) -> Workflow:
    flow = Workflow("bench")

    @flow.step(next="again", idempotent=idempotent)
    def work(n: int) -> int:
        return work_unit(n)

    @flow.gate(routes={"more": loop(work, max=steps, then=END), "done": END})
    def again(n: int) -> str:
        return "more" if n >= 0 else "done"

    return flow


async def direct(steps: int) -> None:
    n = 0
    for _ in range(steps + 1):
        n = work_unit(n)
        _ = "more" if n >= 0 else "done"


async def bare_appends(store: SessionStore, count: int, session: str) -> None:
    """The store's own price: ``count`` appends of a record-sized entry."""
    parent = None
    for i in range(count):
        entry_id = f"entry_{uuid.uuid4().hex[:20]}"
        entry: Any = {
            "id": entry_id,
            "sessionId": session,
            "parentId": parent,
            "kind": "custom",
            "customType": "prism.workflow",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "data": {"t": "done", "seq": i, "step": "work", "value": i, "next": "again"},
        }
        await store.append(entry)
        parent = entry_id


async def measure(steps: int, runs: int, home: Path) -> dict[str, float]:
    jsonl = create_jsonl_session_store(home / "bench.jsonl")
    memory = create_memory_session_store()
    idempotent, non_idempotent = build(steps, True), build(steps, False)
    total_steps = 2 * (steps + 1)  # work and gate, steps + 1 times each
    cases: dict[str, Callable[[int], Awaitable[Any]]] = {
        "direct": lambda r: direct(steps),
        "JSONL, idempotent step": lambda r: run_workflow(
            idempotent, 0, store=jsonl, workflow_id=f"i-{r}"
        ),
        "JSONL, non-idempotent step": lambda r: run_workflow(
            non_idempotent, 0, store=jsonl, workflow_id=f"n-{r}"
        ),
        "memory store, idempotent step": lambda r: run_workflow(
            idempotent, 0, store=memory, workflow_id=f"m-{r}"
        ),
        "bare JSONL append (one per step)": lambda r: bare_appends(jsonl, total_steps, f"bare-{r}"),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(runs + 2):
        for name, case in cases.items():
            start = time.perf_counter()
            await case(r)
            if r >= 2:  # two warm-up rounds
                timings[name].append(time.perf_counter() - start)
    base = statistics.median(timings["direct"])
    out = {"step's own work, called directly": base / total_steps * 1000}
    for name, values in timings.items():
        if name != "direct":
            out[name] = (statistics.median(values) - base) / total_steps * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(measure, args.steps, args.runs, Path(tmp))
    print(f"{2 * (args.steps + 1)} steps per run, median of {args.runs} runs; ms per step:")
    for name, value in result.items():
        print(f"  {name}: {value:.3f}")


if __name__ == "__main__":
    main()
