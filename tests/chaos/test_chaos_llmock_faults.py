"""Every llmock fault class, before and after output started, against an agent
session on the OpenAI-compatible adapter (llmock runs as a real process and
each fault is scripted for the next request through its control API).

Before output: HTTP errors with Retry-After are retried after the server's
wait (visible as ``retry_scheduled``), and broken streams are retried.
After output: nothing is retried and the run fails; no partial answer is
ever reported as a success. llmock's own verdict is read after each case and
every finding it makes is checked against what the client did."""

from __future__ import annotations

from typing import Any

import pytest
from tests.chaos.chaos_support import (
    ANSWER,
    KEY,
    Outcome,
    check_finding,
    make_provider,
    run_agent,
    weather_tool,
)
from tests.chaos.servers import LLMockControl, ServerProcess

# Error code the client reports for each stream fault.
STREAM_FAULT_CODES = {
    "disconnect": "ECONNRESET",
    "truncate": "stream_incomplete",
    "malformed": "malformed_chunk",
    "stall": "ETIMEDOUT",
}


def _fault(kind: str, after: int) -> dict[str, Any]:
    # A stall far longer than the client's read timeout: llmock records how
    # long the client sat through it, and a client without a read timeout
    # would earn a no_read_timeout finding (which check_finding never allows).
    return {"type": "stream_fault", "kind": kind, "after_chunks": after, "stall_seconds": 3.0}


def _assert_succeeded_with_full_answer(outcome: Outcome) -> None:
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    assert outcome.result.text == ANSWER
    assert outcome.result.stop_reason == "stop"
    assert len(outcome.of_type("run_finished")) == 1


def _assert_failed_without_success(outcome: Outcome, code: str) -> None:
    assert outcome.result is None
    assert outcome.error is not None and outcome.error["code"] == code
    assert not outcome.of_type("run_finished")
    assert not outcome.of_type("message_finished")


@pytest.mark.anyio
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("retry_after", [0.6, 2.0])
async def test_http_error_with_retry_after_is_retried_after_the_wait(
    llmock_process: ServerProcess, chaos: LLMockControl, status: int, retry_after: float
) -> None:
    chaos.script({"type": "fail", "status": status, "retry_after": retry_after})
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(provider, f"hello {status} {retry_after}")
    _assert_succeeded_with_full_answer(outcome)
    scheduled = outcome.of_type("retry_scheduled")
    assert [e["delayMs"] for e in scheduled] == [int(retry_after * 1000)]
    assert scheduled[0]["error"]["status"] == status
    assert scheduled[0]["error"]["retryAfterMs"] == int(retry_after * 1000)
    attempts = chaos.requests()
    assert [(r["status"], r["retry_after"]) for r in attempts] == [
        (status, retry_after),
        (200, None),
    ]
    # llmock timed the gap on its own clock: no retry_after_ignored finding.
    verdict = chaos.verdict()
    assert verdict["findings"] == [], chaos.verdict_text()
    assert verdict["passed"] is True


@pytest.mark.anyio
async def test_a_client_error_is_not_retried(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    chaos.script({"type": "fail", "status": 400, "message": "bad request (scripted)"})
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(provider, "hello 400")
    _assert_failed_without_success(outcome, "400")
    assert not outcome.of_type("retry_scheduled")
    assert len(chaos.requests()) == 1
    assert chaos.verdict()["findings"] == []  # in particular no retried_non_retryable


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "after"),
    [
        ("disconnect", 0),
        ("disconnect", 1),
        ("truncate", 0),
        ("truncate", 1),
        ("malformed", 0),
        ("malformed", 1),
        ("stall", 0),
        ("stall", 1),
    ],
)
async def test_stream_fault_before_output_is_retried(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str, after: int
) -> None:
    chaos.script(_fault(kind, after))
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(provider, f"hello before {kind} {after}")
    _assert_succeeded_with_full_answer(outcome)
    assert outcome.streamed_text == ANSWER  # nothing from the broken attempt leaked
    scheduled = outcome.of_type("retry_scheduled")
    assert [e["error"]["code"] for e in scheduled] == [STREAM_FAULT_CODES[kind]]
    attempts = chaos.requests()
    assert [r["fault"] for r in attempts] == [f"stream:{kind}@{after}", None]
    assert attempts[1]["completed"] is True
    for finding in chaos.verdict()["findings"]:
        check_finding(finding, outcome)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "after"),
    [
        ("disconnect", 2),
        ("disconnect", 4),
        ("truncate", 2),
        ("truncate", 5),  # all text, no finish reason
        ("truncate", 6),  # finish reason, no usage, no [DONE]
        ("malformed", 3),
        ("malformed", 5),  # the finish-reason chunk itself
        ("stall", 3),
    ],
)
async def test_stream_fault_after_output_started_is_an_error_never_retried(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str, after: int
) -> None:
    chaos.script(_fault(kind, after))
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(provider, f"hello after {kind} {after}")
    _assert_failed_without_success(outcome, STREAM_FAULT_CODES[kind])
    assert outcome.streamed_text  # the text had started: the retry was unsafe
    assert not outcome.of_type("retry_scheduled")
    assert KEY not in str(outcome.error)
    attempts = chaos.requests()
    assert [r["fault"] for r in attempts] == [f"stream:{kind}@{after}"]
    # A malformed chunk does not end the response: the server may finish
    # writing it into socket buffers after the client stopped reading.
    if kind != "malformed":
        assert attempts[0]["completed"] is False
    # llmock cannot see the client raise, so it judges "not retried" alone.
    # Each finding is checked against what the client actually did.
    findings = {f["code"]: f for f in chaos.verdict()["findings"]}
    expected = {
        "disconnect": {"gave_up"},
        "truncate": {"truncated_stream_accepted"},
        "malformed": {"malformed_chunk_ignored"},
        "stall": set(),
    }[kind]
    assert set(findings) == expected, chaos.verdict_text()
    # gave_up / truncated_stream_accepted / malformed_chunk_ignored all mean
    # "the client did not retry": true, and right, because output had
    # started; the client did not accept the stream, it failed the run.
    for finding in findings.values():
        check_finding(finding, outcome)


@pytest.mark.anyio
async def test_billed_usage_reaches_the_error_when_only_done_is_missing(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    prompt = "hello usage check"
    async with make_provider(llmock_process) as provider:
        clean = await run_agent(provider, prompt)
        assert clean.result is not None
        chaos.script(_fault("truncate", 7))  # text, finish reason and usage: no [DONE]
        cut = await run_agent(provider, prompt)
    _assert_failed_without_success(cut, "stream_incomplete")
    assert cut.error is not None
    assert cut.error["details"]["usage"] == clean.result.usage
    assert clean.result.usage["inputTokens"] > 0 and clean.result.usage["outputTokens"] > 0


@pytest.mark.anyio
async def test_require_done_false_accepts_a_finished_stream_but_never_a_cut_one(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    async with make_provider(llmock_process, require_done=False) as provider:
        chaos.script(_fault("truncate", 7))
        finished = await run_agent(provider, "hello lenient finished")
        chaos.script(_fault("truncate", 3))
        cut = await run_agent(provider, "hello lenient cut")
    _assert_succeeded_with_full_answer(finished)
    assert finished.result is not None and finished.result.usage["outputTokens"] > 0
    _assert_failed_without_success(cut, "stream_incomplete")


@pytest.mark.anyio
async def test_usage_is_summed_exactly_across_a_tool_round(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    calls: list[dict[str, Any]] = []
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(
            provider, "what is the weather in Paris", tools=(weather_tool(calls),)
        )
    _assert_succeeded_with_full_answer(outcome)
    assert outcome.result is not None and outcome.result.tool_rounds == 1
    assert len(calls) == 1 and isinstance(calls[0].get("city"), str)
    turns = [e["usage"] for e in outcome.of_type("message_finished")]
    assert len(turns) == 2
    for key in ("inputTokens", "outputTokens", "totalTokens"):
        assert outcome.result.usage[key] == sum(t[key] for t in turns)
    # Two requests, the second carrying the tool result back.
    bodies = [r["body"] for r in chaos.requests()]
    assert [m["role"] for m in bodies[1]["messages"]][-1] == "tool"
    assert all(b["stream_options"] == {"include_usage": True} for b in bodies)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["malformed_arguments", "unknown_tool"])
async def test_broken_tool_call_goes_back_to_the_model_and_the_run_goes_on(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    calls: list[dict[str, Any]] = []
    chaos.script({"type": "tool_fault", "kind": kind})
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(
            provider, f"weather in Paris ({kind})", tools=(weather_tool(calls),)
        )
    _assert_succeeded_with_full_answer(outcome)
    assert calls == []  # a broken call never runs the tool
    results = [e["result"] for e in outcome.of_type("tool_result")]
    assert len(results) == 1 and results[0]["isError"] is True
    code = "invalid_arguments" if kind == "malformed_arguments" else "unknown_tool"
    assert results[0]["value"]["code"] == code
    # The model saw the error: the second request carries it as the tool result.
    second = chaos.requests()[1]["body"]["messages"][-1]
    assert second["role"] == "tool" and code in second["content"]


@pytest.mark.anyio
async def test_two_broken_attempts_back_off_with_jitter_then_succeed(
    llmock_process: ServerProcess, chaos: LLMockControl
) -> None:
    chaos.script(_fault("disconnect", 0), _fault("truncate", 1))
    async with make_provider(llmock_process) as provider:
        outcome = await run_agent(provider, "hello twice broken")
    _assert_succeeded_with_full_answer(outcome)
    scheduled = outcome.of_type("retry_scheduled")
    assert [e["error"]["code"] for e in scheduled] == ["ECONNRESET", "stream_incomplete"]
    # Jitter draws each wait from 75-100 % of 100 * 2**(attempt-1) ms.
    delays = [e["delayMs"] for e in scheduled]
    assert 75 <= delays[0] <= 100 and 150 <= delays[1] <= 200
    assert len(chaos.requests()) == 3
    assert chaos.verdict()["findings"] == [], chaos.verdict_text()  # no no_backoff
