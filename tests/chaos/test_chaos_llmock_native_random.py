"""Seeded random chaos for the native adapters against llmock: agent runs
with 0-3 faults each (HTTP errors with Retry-After, 529 included, a 400,
every stream fault at any chunk, broken tool calls). A run either returns
the complete answer from an attempt llmock served whole, or fails with a
known error; no partial answer is reported as a success, attempts are
bounded, and llmock's findings are checked against what the client did."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.chaos.chaos_support import Outcome, check_finding, weather_tool
from tests.chaos.servers import LLMockControl, ServerProcess
from tests.chaos.test_chaos_llmock_native import ADAPTERS, STOP, answer, make, run

SEED = 33
RUNS = 14
MAX_ATTEMPTS = 3
KNOWN_ERROR_CODES = {
    "400", "429", "500", "503", "529",
    "ECONNRESET", "ETIMEDOUT", "stream_incomplete", "malformed_chunk",
}  # fmt: skip


def _draw_fault(rng: random.Random, *, tools: bool) -> dict[str, Any]:
    kind = rng.choices(["http", "stream", "client", "tool"], weights=[3, 5, 1, 2])[0]
    if kind == "http":
        status = rng.choice([429, 500, 503, 529])
        return {"type": "fail", "status": status, "retry_after": rng.choice([0.05, 0.1])}
    if kind == "client":
        return {"type": "fail", "status": 400}
    if kind == "tool" and tools:
        return {"type": "tool_fault", "kind": rng.choice(["malformed_arguments", "unknown_tool"])}
    return {
        "type": "stream_fault",
        "kind": rng.choice(["disconnect", "truncate", "malformed", "stall"]),
        "after_chunks": rng.randint(0, 8),
        "stall_seconds": 3.0,
    }


def _run_of(record: dict[str, Any]) -> int:
    body = record["body"]
    first = body["messages"][0] if "messages" in body else body["input"][0]
    content = first["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return int(text.rpartition("#")[2])


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
async def test_random_chaos_never_reports_a_partial_answer_as_success(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    rng = random.Random(SEED)
    outcomes: list[Outcome] = []
    scripted: list[list[dict[str, Any]]] = []
    async with make(kind, llmock_process) as provider:
        for number in range(RUNS):
            tools = rng.random() < 0.4
            faults = [_draw_fault(rng, tools=tools) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
            scripted.append(faults)
            if faults:
                chaos.script(*faults)
            calls: list[dict[str, Any]] = []
            prompt = f"{'weather in Paris' if tools else 'hello'} chaos run #{number}"
            outcomes.append(
                await run(kind, provider, prompt, tools=(weather_tool(calls),) if tools else ())
            )
            chaos.clear_script()

    records = chaos.requests()
    by_run: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_run.setdefault(_run_of(record), []).append(record)
    endings = {"success": 0, "failure": 0}
    for number, outcome in enumerate(outcomes):
        context = f"{kind} run #{number} with {scripted[number]}"
        attempts = by_run[number]
        if outcome.result is not None:
            endings["success"] += 1
            assert outcome.result.text == answer(kind), context
            assert outcome.result.stop_reason == STOP[kind], context
            last = attempts[-1]
            assert last["status"] == 200 and last["fault"] is None and last["completed"], context
        else:
            endings["failure"] += 1
            assert outcome.error is not None, context
            assert outcome.error["code"] in KNOWN_ERROR_CODES, context
            assert not outcome.of_type("run_finished"), context
        turns = 1 + (outcome.result.tool_rounds if outcome.result is not None else 0)
        assert len(attempts) <= turns * MAX_ATTEMPTS, context
    assert endings["success"] >= 3 and endings["failure"] >= 2, endings
    for finding in chaos.verdict()["findings"]:
        number = _run_of(next(r for r in records if r["seq"] == finding["requests"][-1]))
        outcome = outcomes[number]
        if finding["code"] == "gave_up" and outcome.of_type("message_started"):
            # Output had started as a streamed tool call (no text, so
            # check_finding cannot see it): a retry would stream it twice.
            assert outcome.result is None and outcome.error is not None, finding
            assert outcome.error["retryable"] is True, finding
            continue
        check_finding(finding, outcome)
