"""A seeded random-chaos session against llmock: many agent runs, each with
0-3 faults drawn from every class llmock has (HTTP errors with Retry-After,
client errors, disconnects, truncation, malformed chunks and stalls at any
chunk, broken tool calls), queued for its requests.

The invariant: a run either returns the complete answer (exact text, a
finish reason, the last attempt of every request served to completion
without a fault) or fails with an error; no partial answer is ever
reported as a success. Then llmock's verdict over the whole session is read
and each finding is checked against what the client did in that run.

The draws come from a seeded ``random.Random`` in the test, not from
llmock's own sampler (``--stream-fault``/``--error-rate``), which uses the
unseeded global ``random`` and so cannot reproduce a failing session."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.chaos.chaos_support import (
    ANSWER,
    Outcome,
    check_finding,
    make_provider,
    run_agent,
    weather_tool,
)
from tests.chaos.servers import LLMockControl, ServerProcess

SEED = 18
RUNS = 24
MAX_ATTEMPTS = 3  # RetryOptions' default, which run_agent uses
KNOWN_ERROR_CODES = {
    "400",
    "429",
    "500",
    "502",
    "503",
    "ECONNRESET",
    "ETIMEDOUT",
    "stream_incomplete",
    "malformed_chunk",
}


def _draw_fault(rng: random.Random, *, tools: bool) -> dict[str, Any]:
    # A 400 ends a run at once, so it is drawn rarely.
    kind = rng.choices(["http", "stream", "client", "tool"], weights=[3, 5, 1, 2])[0]
    if kind == "http":
        status = rng.choice([429, 500, 502, 503])
        return {"type": "fail", "status": status, "retry_after": rng.choice([0.05, 0.1])}
    if kind == "client":
        return {"type": "fail", "status": 400}
    if kind == "tool" and tools:
        return {"type": "tool_fault", "kind": rng.choice(["malformed_arguments", "unknown_tool"])}
    return {
        "type": "stream_fault",
        "kind": rng.choice(["disconnect", "truncate", "malformed", "stall"]),
        "after_chunks": rng.randint(0, 7),
        "stall_seconds": 3.0,
    }


def _run_of(record: dict[str, Any]) -> int:
    """The run a journaled request belongs to, from its first user message."""
    first = record["body"]["messages"][0]["content"]
    return int(first.rpartition("#")[2])


@pytest.mark.anyio
async def test_random_chaos_never_reports_a_partial_answer_as_success(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    rng = random.Random(SEED)
    outcomes: list[Outcome] = []
    scripted: list[list[dict[str, Any]]] = []
    async with make_provider(llmock_process) as provider:
        for run in range(RUNS):
            tools = rng.random() < 0.4
            faults = [_draw_fault(rng, tools=tools) for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))]
            scripted.append(faults)
            if faults:
                chaos.script(*faults)
            calls: list[dict[str, Any]] = []
            prompt = f"{'weather in Paris' if tools else 'hello'} chaos run #{run}"
            outcomes.append(
                await run_agent(provider, prompt, tools=(weather_tool(calls),) if tools else ())
            )
            chaos.clear_script()  # what this run did not consume must not hit the next

    records = chaos.requests()
    by_run: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_run.setdefault(_run_of(record), []).append(record)

    successes = failures = 0
    for run, outcome in enumerate(outcomes):
        context = f"run #{run} with {scripted[run]}"
        attempts = by_run[run]
        if outcome.result is not None:
            successes += 1
            assert outcome.error is None, context
            assert outcome.result.text == ANSWER, context
            assert outcome.result.stop_reason == "stop", context
            assert len(outcome.of_type("run_finished")) == 1, context
            # The answer came from an attempt the server sent whole, unbroken.
            last = attempts[-1]
            assert last["status"] == 200 and last["fault"] is None, context
            assert last["completed"] is True, context
        else:
            failures += 1
            assert outcome.error is not None, context
            assert outcome.error["code"] in KNOWN_ERROR_CODES, context
            assert not outcome.of_type("run_finished"), context
        # Bounded: each request of a run is attempted at most MAX_ATTEMPTS times.
        retries = len(outcome.of_type("retry_scheduled"))
        turns = 1 + (outcome.result.tool_rounds if outcome.result is not None else 0)
        assert len(attempts) <= turns * MAX_ATTEMPTS and retries <= len(attempts), context

    # The seed gives a session with both kinds of ending (12 and 12 when written).
    assert successes >= 6 and failures >= 6, (successes, failures)

    verdict = chaos.verdict()
    assert verdict["attempts"] == len(records)
    # llmock flags runs it believes accepted a fault; none may stand.
    assert verdict["findings"], "the seed should make llmock suspect something"
    for finding in verdict["findings"]:
        run = _run_of(next(r for r in records if r["seq"] == finding["requests"][-1]))
        check_finding(finding, outcomes[run])
