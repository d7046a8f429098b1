"""Where the Anthropic adapter puts ``cache_control`` breakpoints, and what the
project's cache simulator (a real HTTP server on loopback) bills for them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from prism.providers._anthropic_request import (
    AnthropicRequestPolicy,
    PrefixMemory,
    build_messages_body,
)
from prism.providers.anthropic import create_anthropic_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing import CacheSimulator
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
SYSTEM = {"role": "system", "content": [{"type": "text", "text": "S" * 8000}]}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def body_for(
    messages: list[dict[str, Any]],
    policy: AnthropicRequestPolicy,
    memory: PrefixMemory | None = None,
) -> dict[str, Any]:
    request = {"model": MODEL, "messages": messages, "metadata": {"sessionId": "s1"}}
    return build_messages_body(request, policy=policy, default_options={}, prefix_memory=memory)  # type: ignore[arg-type]


def marked(body: dict[str, Any]) -> list[str]:
    out = ["system" for b in body.get("system", []) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        if any("cache_control" in b for b in message["content"]):
            out.append(f"messages[{i}]")
    return out


def test_auto_marks_system_end_and_stable_row() -> None:
    memory = PrefixMemory()
    first = [
        SYSTEM,
        user("a"),
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
        user("c"),
    ]
    assert marked(body_for(first, AnthropicRequestPolicy(), memory)) == ["system", "messages[2]"]
    grown = [*first, {"role": "assistant", "content": [{"type": "text", "text": "d"}]}, user("e")]
    # Rows 0-2 are unchanged since the previous request: the last of them is marked too.
    assert marked(body_for(grown, AnthropicRequestPolicy(), memory)) == [
        "system",
        "messages[2]",
        "messages[4]",
    ]
    changed = [
        SYSTEM,
        user("a"),
        {"role": "assistant", "content": [{"type": "text", "text": "B"}]},
        user("c"),
    ]
    assert marked(body_for(changed, AnthropicRequestPolicy(), memory)) == [
        "system",
        "messages[0]",
        "messages[2]",
    ]


def test_system_off_and_pinned_modes() -> None:
    messages = [
        SYSTEM,
        user("a"),
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
        user("c"),
    ]
    assert marked(body_for(messages, AnthropicRequestPolicy(cache_breakpoints="system"))) == [
        "system"
    ]
    assert marked(body_for(messages, AnthropicRequestPolicy(cache_breakpoints="off"))) == []
    assert marked(body_for(messages, AnthropicRequestPolicy(cache_breakpoints=(0, -1)))) == [
        "system",
        "messages[0]",
        "messages[2]",
    ]


def test_never_more_than_four_and_never_on_thinking() -> None:
    reasoning = {"type": "thinking", "text": "t", "signature": "sig"}
    messages = [
        user("a"),
        {"role": "assistant", "content": [reasoning, {"type": "text", "text": "x"}]},
        user("c"),
    ]
    body = body_for(messages, AnthropicRequestPolicy(cache_breakpoints=(0, 1, 2)))
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "t",
        "signature": "sig",
    }
    assert "cache_control" in body["messages"][1]["content"][1]
    total = sum(1 for m in body["messages"] for b in m["content"] if "cache_control" in b)
    assert total == 3


def _sim_body(messages: list[dict[str, Any]], marks: list[int]) -> dict[str, Any]:
    wire = [{"role": m["role"], "content": [dict(b) for b in m["content"]]} for m in messages]
    for i in marks:
        wire[i]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {"model": "m", "messages": wire, "max_tokens": 10}


def test_simulator_reads_prefix_respects_minimum_and_ttl() -> None:
    now = [0.0]
    sim = CacheSimulator(
        responder=lambda body: [{"type": "text", "text": "ok"}], clock=lambda: now[0]
    )
    long_a = [user("x" * 8000)]
    first = sim.bill(_sim_body(long_a, [0]))
    assert (first.read, first.written) == (0, first.total)
    grown = [
        *long_a,
        {"role": "assistant", "content": [{"type": "text", "text": "y" * 400}]},
        user("z"),
    ]
    second = sim.bill(_sim_body(grown, [2]))  # lookback finds the entry at block 0
    assert second.read == first.total and second.written == second.total - first.total
    short = sim.bill(_sim_body([user("tiny")], [0]))
    assert short.written == 0  # under min_tokens: not cached
    now[0] = 1000.0  # past the TTL
    expired = sim.bill(_sim_body(grown, [2]))
    assert expired.read == 0


async def test_simulator_over_http_with_the_adapter_reports_cache_usage() -> None:
    responses = iter([[{"type": "text", "text": "one"}], [{"type": "text", "text": "two"}]])
    with CacheSimulator(responder=lambda body: next(responses)) as sim:
        provider = create_anthropic_provider(
            base_url=sim.url, api_key="sk-sim-not-a-real-key-0001", redactor=NOOP_REDACTOR
        )
        agent = create_agent(model=MODEL, provider=provider, system="S" * 8000)
        session = agent.create_session()
        await session.run("hello")
        second = await session.run("again")
        await provider.aclose()
    assert second.usage["cacheReadTokens"] > 2000
    assert second.usage["inputTokens"] == sim.log[1].total


async def test_gate_session_writes_no_more_than_trips_plus_one() -> None:
    """A 12-run session whose gate trips: prefix rewrites (requests that
    re-write what an earlier request had cached) stay within trips + 1."""
    big = "r" * 24_000
    counter = iter(range(10_000))

    def responder(body: dict[str, Any]) -> list[dict[str, Any]]:
        last = body["messages"][-1]["content"][0]
        if last.get("type") == "tool_result":
            return [{"type": "text", "text": "done"}]
        n = next(counter)
        return [
            {"type": "thinking", "thinking": "think " * 50, "signature": f"sig{n}"},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "read", "input": {"n": n}},
        ]

    read_tool = define_tool("read", lambda args, ctx: big, parameters={"type": "object"})
    model = {**MODEL, "limits": {"contextWindow": 60_000, "maxOutputTokens": 4_000}}
    trips: list[dict[str, Any]] = []
    with CacheSimulator(responder=responder) as sim:
        provider = create_anthropic_provider(
            base_url=sim.url,
            api_key="sk-sim-not-a-real-key-0001",
            timeout=httpx.Timeout(30.0),
            redactor=NOOP_REDACTOR,
        )
        agent = create_agent(
            model=model,
            provider=provider,
            tools=[read_tool],
            system="S" * 8000,
            attention_compiler=True,
        )
        session = agent.create_session()
        session.subscribe(lambda e: trips.append(e) if e["type"] == "attention_compiled" else None)
        for i in range(12):
            await session.run(f"step {i}")
        await provider.aclose()
    rewrites = _rewrites(sim)
    assert trips, "the fixture must trip the gate"
    assert rewrites <= _trip_requests(trips) + 1
    assert sum(b.read for b in sim.log) > 0.5 * sum(b.total for b in sim.log)


def _rewrites(sim: CacheSimulator) -> int:
    """Requests whose read prefix is shorter than what the previous one left cached."""
    count, cached = 0, 0
    for bill in sim.log:
        if bill.written and bill.read < cached:
            count += 1
        elif bill.written and cached == 0:
            count += 1
        cached = bill.read + bill.written
    return count


def _trip_requests(events: list[dict[str, Any]]) -> int:
    # One attention_compiled event per mutated request; a trip is where the
    # stubbed count grows (re-applied rows are reported every later turn).
    trips, seen = 0, -1
    for event in events:
        mutated = event["stubbedToolResults"] + event["droppedThinkingTurns"]
        if mutated > seen:
            trips += 1
        seen = mutated
    return trips


def test_prefix_memory_is_bounded_per_session() -> None:
    memory = PrefixMemory(sessions=2)
    assert memory.stable_rows("a", [1, 2, 3]) == 0
    assert memory.stable_rows("a", [1, 2, 4]) == 2
    memory.stable_rows("b", [1])
    memory.stable_rows("c", [1])  # "a" is the least recently used: dropped
    assert memory.stable_rows("a", [1, 2, 4]) == 0
    assert memory.stable_rows("c", [1, 5]) == 1


def test_requests_without_a_session_get_no_stable_row_breakpoint() -> None:
    messages = [
        SYSTEM,
        user("a"),
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
        user("c"),
    ]
    request = {"model": MODEL, "messages": messages}
    memory = PrefixMemory()
    for _ in range(2):
        body = build_messages_body(
            request, policy=AnthropicRequestPolicy(), default_options={}, prefix_memory=memory
        )  # type: ignore[arg-type]
    assert marked(body) == ["system", "messages[2]"]
