"""The attention gate tells the Anthropic adapter where the stable prefix ends
(``metadata["stablePrefixMessages"]``): an agent session over the project's
cache simulator (real HTTP on loopback), with a provider instance built anew
for every request, so no adapter-side memory can stand in for the gate."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from prism.attention import create_attention_sticky_frontier
from prism.attention.compile import compile_attention
from prism.contracts import STABLE_PREFIX_METADATA, ProviderEvent, ProviderRequest
from prism.providers._anthropic_request import (
    AnthropicRequestPolicy,
    PrefixMemory,
    build_messages_body,
    serialize_messages,
)
from prism.providers.anthropic import create_anthropic_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing import CacheSimulator
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

MODEL = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "limits": {"contextWindow": 200_000, "maxOutputTokens": 1024},
}
BIG = "r" * 6000  # ~1500 tokens per tool result


class FreshPerRequest:
    """A host provider that builds its adapter for every request (as a host
    rotating credentials might): the adapter starts with no memory each time."""

    name = "anthropic"

    def __init__(self, url: str, policy: AnthropicRequestPolicy) -> None:
        self.url = url
        self.policy = policy
        self.requests: list[ProviderRequest] = []

    async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        provider = create_anthropic_provider(
            base_url=self.url,
            api_key="sk-gate-test-not-a-real-key-01",
            request_policy=self.policy,
            redactor=NOOP_REDACTOR,
        )
        try:
            async for event in provider.generate(request):
                yield event
        finally:
            await provider.aclose()


def respond(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]["content"]
    if last and last[0].get("type") == "tool_result":
        return [{"type": "text", "text": "done"}]
    n = sum(1 for m in body["messages"] if m["role"] == "user")
    return [{"type": "tool_use", "id": f"call_{n}", "name": "fetch", "input": {"n": n}}]


def marked_blocks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, message in enumerate(body["messages"])
        for j, block in enumerate(message["content"])
        if "cache_control" in block
    ]


def wire_position(request: ProviderRequest, stable: int) -> tuple[int, int]:
    """Where messages[stable - 1]'s last block lands on the wire."""
    row_ends: list[Any] = []
    _, wire = serialize_messages(request["messages"], row_ends=row_ends)
    row, block = next(e for e in reversed(row_ends[:stable]) if e is not None)
    return row, next(j for j, b in enumerate(wire[row]["content"]) if b == block)


async def run_session(policy: AnthropicRequestPolicy) -> tuple[Any, list[Any], list[int]]:
    bodies: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> list[dict[str, Any]]:
        bodies.append(body)
        return respond(body)

    with CacheSimulator(responder=responder) as sim:
        provider = FreshPerRequest(sim.url, policy)
        fetch = define_tool("fetch", lambda args, ctx: BIG)
        agent = create_agent(
            model=MODEL,
            provider=provider,
            tools=[fetch],
            system="S" * 6000,
            attention_compiler={"maxInputTokens": 9000, "keepLast": 1},
        )
        session = agent.create_session()
        trips: list[int] = []
        session.subscribe(
            lambda e: (
                trips.append(len(provider.requests))
                if e["type"] == "attention_compiled" and e["stubbedToolResults"]
                else None
            )
        )
        for n in range(6):  # one run = 2 requests
            await session.run(f"task {n}")
        return provider, bodies, trips


async def test_breakpoint_sits_at_the_frontier_row_and_moves_once_at_the_trip() -> None:
    provider, bodies, trips = await run_session(AnthropicRequestPolicy())
    requests = provider.requests
    assert len(requests) == len(bodies) == 12
    claims = [(r.get("metadata") or {}).get(STABLE_PREFIX_METADATA) for r in requests]
    assert claims[0] is None  # the gate's first request: no claim
    stubbed = [i for i, r in enumerate(requests) if "omitted" in json.dumps(r["messages"])]
    assert stubbed, "the gate never tripped; the test needs a trip"
    first_trip = stubbed[0]
    for i in range(1, len(requests)):
        previous, current = requests[i - 1]["messages"], requests[i]["messages"]
        claim = claims[i]
        assert isinstance(claim, int)
        # The claim is exact: the rows before it equal the previous request's...
        assert current[:claim] == previous[:claim]
        # ...and it stops at the first row that changed (or the previous end).
        assert claim == len(previous) or current[claim] != previous[claim]
        row, block = wire_position(requests[i], claim)
        assert (row, block) in marked_blocks(bodies[i]), (i, claim)
    # Between trips the stable row advances to the previous request's end;
    # at the trip it moves back once, to just before the first stubbed row.
    for i in range(1, len(requests)):
        if i == first_trip:
            assert claims[i] < len(requests[i - 1]["messages"])
        else:
            assert claims[i] == len(requests[i - 1]["messages"]), i
    assert trips  # the session reported the trip the requests show


async def test_policy_still_turns_it_off_or_pins() -> None:
    _provider, bodies, _ = await run_session(AnthropicRequestPolicy(cache_breakpoints="system"))
    assert all(marked_blocks(b) == [] for b in bodies)
    assert all("cache_control" in b["system"][-1] for b in bodies)
    _, pinned, _ = await run_session(AnthropicRequestPolicy(cache_breakpoints=(0,)))
    assert all(marked_blocks(b) == [(0, 0)] for b in pinned)


# -- the adapter's side, request by request --------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def body_for(messages: list[Any], metadata: dict[str, Any], memory: PrefixMemory) -> Any:
    request = {"model": MODEL, "messages": messages, "metadata": {"sessionId": "s", **metadata}}
    return build_messages_body(
        request,  # type: ignore[arg-type]
        policy=AnthropicRequestPolicy(),
        default_options={},
        prefix_memory=memory,
    )


def test_the_gates_claim_wins_over_fingerprints() -> None:
    memory = PrefixMemory()
    system = {"role": "system", "content": [{"type": "text", "text": "S"}]}
    rows = [system, user("a"), assistant("b"), user("c"), assistant("d"), user("e")]
    body_for(rows, {}, memory)
    # Fingerprints would say all five message rows are stable; the gate says two.
    body = body_for([*rows, assistant("f"), user("g")], {STABLE_PREFIX_METADATA: 3}, memory)
    assert marked_blocks(body) == [(1, 0), (6, 0)]
    # A claim of nothing stable: only the end, and no fallback to fingerprints.
    body = body_for(rows, {STABLE_PREFIX_METADATA: 0}, memory)
    assert marked_blocks(body) == [(4, 0)]
    # A claim ending inside a merged wire row marks that row's own block.
    merged = [user("a"), assistant("b"), user("c"), user("new")]
    body = body_for(merged, {STABLE_PREFIX_METADATA: 3}, PrefixMemory())
    assert marked_blocks(body) == [(2, 0), (2, 1)]


@pytest.mark.parametrize("bad", [-1, True, "3", 2.0])
def test_a_malformed_claim_is_ignored_for_fingerprints(bad: Any) -> None:
    memory = PrefixMemory()
    rows = [user("a"), assistant("b"), user("c")]
    body_for(rows, {}, memory)
    body = body_for([*rows, assistant("d"), user("e")], {STABLE_PREFIX_METADATA: bad}, memory)
    assert marked_blocks(body) == [(2, 0), (4, 0)]


def test_frontier_records_the_stable_rows_of_each_compile() -> None:
    frontier = create_attention_sticky_frontier()
    history = [user("a"), assistant("b"), user("c")]

    def compile_once(rows: list[Any]) -> None:
        compile_attention(
            {"maxInputTokens": 100_000},
            {"history": rows},
            frontier=frontier,
            redactor=NOOP_REDACTOR,
        )

    compile_once(history)
    assert frontier.stable_rows is None
    grown = [*history, assistant("d")]
    compile_once(grown)
    assert frontier.stable_rows == 3 and frontier.stable_message is history[2]
    # A rebuilt history (compaction) keeps only its equal leading rows.
    compile_once([history[0], user("summary"), *grown[2:]])
    assert frontier.stable_rows == 1 and frontier.stable_message is history[0]
    frontier.clear()
    compile_once(grown)
    assert frontier.stable_rows is None
