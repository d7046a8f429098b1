"""pytest-benchmark view of the per-turn overhead: one turn on an empty
session vs one turn on a session with 1,200 messages of history (the same-run
baseline), and the same 1,200-message turn as a durable run (checkpoints at
every step, issue 16). The full 300-turn curve and the peer libraries are in
``python -m benches.runtime_overhead``; the durable ratio and the JSONL write
count in ``python -m benches.runtime_overhead --durable``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from benches.runtime_overhead import PAYLOAD, FunctionProvider

from prism import create_memory_session_store
from prism.runtime import AgentSession, create_agent
from prism.tools import define_tool


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _session(
    loop: asyncio.AbstractEventLoop, warm_turns: int, durable: bool = False
) -> AgentSession:
    agent = create_agent(
        model={"provider": "bench", "model": "function"},
        provider=FunctionProvider(),
        tools=[define_tool("lookup", lambda args, ctx: PAYLOAD)],
        store=create_memory_session_store(),
        durable=durable,
    )
    session = agent.create_session("bench")
    for n in range(warm_turns):
        loop.run_until_complete(session.run(f"warm {n}"))
    return session


def _turn(loop: asyncio.AbstractEventLoop, session: AgentSession) -> Any:
    return loop.run_until_complete(session.run("prompt"))


@pytest.mark.benchmark(group="runtime-turn")
def test_runtime_turn_empty_history(benchmark: Any, loop: asyncio.AbstractEventLoop) -> None:
    session = _session(loop, 0)
    benchmark.pedantic(_turn, args=(loop, session), rounds=50, iterations=1, warmup_rounds=2)


@pytest.mark.benchmark(group="runtime-turn")
def test_runtime_turn_1200_messages(benchmark: Any, loop: asyncio.AbstractEventLoop) -> None:
    session = _session(loop, 300)
    benchmark.pedantic(_turn, args=(loop, session), rounds=50, iterations=1, warmup_rounds=2)


@pytest.mark.benchmark(group="runtime-turn")
def test_runtime_turn_1200_messages_durable(
    benchmark: Any, loop: asyncio.AbstractEventLoop
) -> None:
    session = _session(loop, 300, durable=True)
    benchmark.pedantic(_turn, args=(loop, session), rounds=50, iterations=1, warmup_rounds=2)
