"""Cache breakpoints on the 60-run coding session, end to end over HTTP.

An agent session (attention gate on, policy "deep", compaction at 0.9 as in
the attention benchmark) runs the attention benchmark's seeded fixture ``a``
through the Anthropic adapter against prism.testing.CacheSimulator on
loopback, once per breakpoint policy:

- ``auto``: the adapter's default (system+tools, the last row unchanged since
  the previous request, the end of the request);
- ``system``: one fixed breakpoint after the system prompt;
- ``off``: no breakpoints.

For each: cache-read share (read / all input tokens), the bill at Claude
Sonnet 4.5 prices (input 3, cache write 3.75, cache read 0.30, output 15 USD
per million tokens), requests that wrote anything, and prefix rewrites
(requests that wrote again what the previous request had left cached: the
first request and every bust) against the gate's trips.

    python -m benches.cache_breakpoints [--runs 60] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

import anyio

from prism._bench.attention.fixtures import TOOLS, Fixture, coding_turns
from prism.providers.anthropic import AnthropicRequestPolicy, create_anthropic_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing.cache_simulator import CacheSimulator, SimulatedRequest
from prism.tools import define_tool

PRICES = {"input": 3.0, "write": 3.75, "read": 0.30, "output": 15.0}
MODEL: dict[str, Any] = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "limits": {"contextWindow": 200_000, "maxOutputTokens": 8_192},
}
SECONDS_PER_REQUEST = 20.0


def system_prompt(seed: int) -> str:
    """A coding agent's instructions, about 3k tokens (real ones run 2-10k)."""
    rng = random.Random(seed)
    words = "file test edit read command repository branch diff patch error log tool result".split()
    lines = [
        f"Rule {i}: " + " ".join(rng.choice(words) for _ in range(18)) + "." for i in range(120)
    ]
    return "You are a careful coding agent.\n" + "\n".join(lines)


def responder_for(fixture: Fixture, state: dict[str, int]) -> Any:
    def respond(body: dict[str, Any]) -> list[dict[str, Any]]:
        turn = fixture.turns[state["turn"]]
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last and last[0].get("type") == "tool_result":
            return [{"type": "text", "text": turn.answer}]
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": turn.thinking, "signature": f"sig-{state['turn']}"}
        ]
        if turn.call is None:
            return [*blocks, {"type": "text", "text": turn.answer}]
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        call = turn.call
        return [
            *blocks,
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": call["arguments"],
            },
        ]

    return respond


async def run_policy(fixture: Fixture, mode: Any, seed: int) -> dict[str, Any]:
    state = {"turn": 0}
    clock = {"now": 0.0}

    def tick() -> float:
        clock["now"] += SECONDS_PER_REQUEST
        return clock["now"]

    by_call = {t.call["id"]: t for t in fixture.turns if t.call is not None}

    def make_tool(name: str) -> Any:
        return define_tool(
            name, lambda args, ctx: by_call[ctx.tool_call_id].result, description=f"{name} (bench)"
        )

    trips: list[int] = []
    with CacheSimulator(responder=responder_for(fixture, state), clock=tick) as sim:
        provider = create_anthropic_provider(
            base_url=sim.url,
            api_key="sk-bench-not-a-real-key-0001",
            request_policy=AnthropicRequestPolicy(cache_breakpoints=mode),
            redactor=NOOP_REDACTOR,
        )
        agent = create_agent(
            model=MODEL,
            provider=provider,
            tools=[make_tool(t) for t in TOOLS],
            system=system_prompt(seed),
            attention_compiler=True,
            compaction={"trigger": {"type": "input_ratio", "ratio": 0.9}},
        )
        session = agent.create_session(id=f"bench-cache-{mode}")
        frontier_size = {"n": 0}

        def on_event(event: dict[str, Any]) -> None:
            if event["type"] == "attention_compiled":
                size = event["stubbedToolResults"] + event["droppedThinkingTurns"]
                if size > frontier_size["n"]:
                    trips.append(len(sim.log))
                frontier_size["n"] = max(frontier_size["n"], size)

        session.subscribe(on_event)
        for index in range(len(fixture.turns)):
            state["turn"] = index
            await session.run(fixture.turns[index].user)
        await provider.aclose()
        log = list(sim.log)
    return summarize(str(mode), log, len(trips))


def rewrites(log: list[SimulatedRequest]) -> int:
    count, cached = 0, 0
    for bill in log:
        if bill.written and (cached == 0 or bill.read < cached):
            count += 1
        cached = bill.read + bill.written
    return count


def summarize(name: str, log: list[SimulatedRequest], trips: int) -> dict[str, Any]:
    total = sum(b.total for b in log)
    read = sum(b.read for b in log)
    written = sum(b.written for b in log)
    fresh = total - read - written
    cost = (fresh * PRICES["input"] + written * PRICES["write"] + read * PRICES["read"]) / 1e6
    return {
        "policy": name,
        "requests": len(log),
        "inputTokens": total,
        "cacheRead": read,
        "cacheWrite": written,
        "cacheReadShare": round(read / total, 4) if total else 0.0,
        "inputCostUsd": round(cost, 4),
        "requestsWithWrites": sum(1 for b in log if b.written),
        "prefixRewrites": rewrites(log),
        "gateTrips": trips,
    }


async def main_async(runs: int, seed: int) -> list[dict[str, Any]]:
    fixture = Fixture("a", f"(a) growing coding session: {runs} runs", coding_turns(seed, runs))
    return [await run_policy(fixture, mode, seed) for mode in ("auto", "system", "off")]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = anyio.run(main_async, args.runs, args.seed)
    by_name = {r["policy"]: r for r in rows}
    auto, fixed = by_name["auto"], by_name["system"]
    print(json.dumps(rows, indent=2))
    ratio = (
        auto["cacheReadShare"] / fixed["cacheReadShare"]
        if fixed["cacheReadShare"]
        else float("inf")
    )
    print(f"\nread share auto / one fixed breakpoint: {ratio:.2f}x (target >= 1.5x)")
    print(
        f"prefix rewrites with auto: {auto['prefixRewrites']} vs gate trips + 1 = "
        f"{auto['gateTrips'] + 1} (target: not more)"
    )
    print(
        f"cost auto / system / off: {auto['inputCostUsd']} / {fixed['inputCostUsd']} / {by_name['off']['inputCostUsd']} USD"
    )
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
