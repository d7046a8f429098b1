"""The native adapters (Anthropic Messages, OpenAI Responses) against llmock's
``anthropic`` and ``openai_responses`` routes, run as a real process, with
its scripted faults: HTTP errors with Retry-After (429, 529, 503), a 400,
and every stream fault before and after output started; a tool round; and
the prism.testing conformance checks on a plain stream. llmock's own verdict
is read after each case and every finding is checked against what the
client did (chaos_support.check_finding)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.chaos.chaos_support import KEY, RETRY_SEED, Outcome, check_finding, weather_tool
from tests.chaos.servers import LLMockControl, ServerProcess

from prism.errors import ProviderError
from prism.providers.anthropic import create_anthropic_provider
from prism.providers.openai_responses import create_openai_responses_provider
from prism.retry import RetryOptions
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing import assert_provider_stream_conforms

READ_TIMEOUT_S = 0.5
ADAPTERS = ("anthropic", "responses")
MODELS = {
    "anthropic": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
    "responses": {"provider": "openai-responses", "model": "gpt-5"},
}
STOP = {"anthropic": "end_turn", "responses": "stop"}
# Index of the first text chunk of llmock's stream: message_start,
# content_block_start, ping / created, in_progress, output_item.added,
# content_part.added. A fault at that index strikes before any text.
FIRST_TEXT = {"anthropic": 3, "responses": 4}
STREAM_FAULT_CODES = {
    "disconnect": "ECONNRESET",
    "truncate": "stream_incomplete",
    "malformed": "malformed_chunk",
    "stall": "ETIMEDOUT",
}


def answer(kind: str) -> str:
    return f"Mock response from {MODELS[kind]['model']}."


def make(kind: str, server: ServerProcess) -> Any:
    timeout = httpx.Timeout(10.0, read=READ_TIMEOUT_S)
    if kind == "anthropic":
        return create_anthropic_provider(
            base_url=server.url + "/anthropic", api_key=KEY, timeout=timeout, redactor=NOOP_REDACTOR
        )
    return create_openai_responses_provider(
        base_url=server.url + "/v1", api_key=KEY, timeout=timeout, redactor=NOOP_REDACTOR
    )


async def run(kind: str, provider: Any, prompt: str, *, tools: tuple[Any, ...] = ()) -> Outcome:
    agent = create_agent(
        model=MODELS[kind],
        provider=provider,
        tools=list(tools),
        retry=RetryOptions(seed=RETRY_SEED),
        max_tool_rounds=3,
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    try:
        result = await session.run(prompt)
    except ProviderError as exc:
        return Outcome(None, dict(exc.info), events)
    return Outcome(result, None, events)


def succeeded(kind: str, outcome: Outcome) -> None:
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    assert outcome.result.text == answer(kind)
    assert outcome.result.stop_reason == STOP[kind]
    assert outcome.streamed_text == answer(kind)  # nothing leaked from a broken attempt


def check_verdict(chaos: LLMockControl, outcome: Outcome) -> None:
    for finding in chaos.verdict()["findings"]:
        check_finding(finding, outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
async def test_plain_stream_conforms(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    request = {
        "model": MODELS[kind],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hello there, how are you doing today?"}],
            }
        ],
    }
    async with make(kind, llmock_process) as provider:
        events = await assert_provider_stream_conforms(
            provider,
            request,
            expect_text=answer(kind),
            expect_stop_reason=STOP[kind],  # type: ignore[arg-type]
        )
    usage = events[-1]["usage"]  # type: ignore[typeddict-item]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0, usage


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
@pytest.mark.parametrize("status", [429, 529, 503])
async def test_http_error_with_retry_after_is_retried_after_the_wait(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str, status: int
) -> None:
    chaos.script({"type": "fail", "status": status, "retry_after": 0.6})
    async with make(kind, llmock_process) as provider:
        outcome = await run(kind, provider, f"hello {status}")
    succeeded(kind, outcome)
    scheduled = outcome.of_type("retry_scheduled")
    assert [e["delayMs"] for e in scheduled] == [600]
    assert scheduled[0]["error"]["code"] == str(status)
    assert [r["status"] for r in chaos.requests()] == [status, 200]
    assert chaos.verdict()["findings"] == [], chaos.verdict_text()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
async def test_a_client_error_is_not_retried(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    chaos.script({"type": "fail", "status": 400})
    async with make(kind, llmock_process) as provider:
        outcome = await run(kind, provider, "bad request")
    assert outcome.result is None and outcome.error is not None
    assert outcome.error["code"] == "400"
    assert len(chaos.requests()) == 1
    check_verdict(chaos, outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
@pytest.mark.parametrize("fault", sorted(STREAM_FAULT_CODES))
async def test_stream_fault_before_output_is_retried(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str, fault: str
) -> None:
    chaos.script(
        {
            "type": "stream_fault",
            "kind": fault,
            "after_chunks": FIRST_TEXT[kind],
            "stall_seconds": 3.0,
        }
    )
    async with make(kind, llmock_process) as provider:
        outcome = await run(kind, provider, f"before {fault}")
    succeeded(kind, outcome)
    assert [e["error"]["code"] for e in outcome.of_type("retry_scheduled")] == [
        STREAM_FAULT_CODES[fault]
    ]
    check_verdict(chaos, outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
@pytest.mark.parametrize("fault", sorted(STREAM_FAULT_CODES))
async def test_stream_fault_after_output_fails_and_is_never_retried(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str, fault: str
) -> None:
    chaos.script(
        {
            "type": "stream_fault",
            "kind": fault,
            "after_chunks": FIRST_TEXT[kind] + 1,
            "stall_seconds": 3.0,
        }
    )
    async with make(kind, llmock_process) as provider:
        outcome = await run(kind, provider, f"after {fault}")
    assert outcome.result is None and outcome.error is not None
    assert outcome.error["code"] == STREAM_FAULT_CODES[fault]
    assert outcome.streamed_text and answer(kind).startswith(outcome.streamed_text)
    assert not outcome.of_type("message_finished")
    assert len(chaos.requests()) == 1
    check_verdict(chaos, outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
async def test_tool_round_sums_usage_and_sends_the_result_back(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    calls: list[dict[str, Any]] = []
    async with make(kind, llmock_process) as provider:
        outcome = await run(
            kind, provider, "what is the weather in Paris", tools=(weather_tool(calls),)
        )
    succeeded(kind, outcome)
    assert outcome.result is not None and outcome.result.tool_rounds == 1
    assert len(calls) == 1 and isinstance(calls[0].get("city"), str)
    turns = [e["usage"] for e in outcome.of_type("message_finished")]
    for key in ("inputTokens", "outputTokens"):
        assert outcome.result.usage[key] == sum(t[key] for t in turns)
    second = chaos.requests()[1]["body"]
    if kind == "anthropic":
        assert second["messages"][-1]["content"][0]["type"] == "tool_result"
        assert second["messages"][-1]["content"][0]["content"] == "sunny"
    else:
        assert second["input"][-1] == {
            "type": "function_call_output",
            "call_id": second["input"][-2]["call_id"],
            "output": "sunny",
        }
        assert second["store"] is False


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ADAPTERS)
async def test_broken_tool_arguments_go_back_to_the_model(
    llmock_process: ServerProcess, chaos: LLMockControl, kind: str
) -> None:
    chaos.script({"type": "tool_fault", "kind": "malformed_arguments"})
    calls: list[dict[str, Any]] = []
    async with make(kind, llmock_process) as provider:
        outcome = await run(
            kind, provider, "weather in Paris (broken)", tools=(weather_tool(calls),)
        )
    succeeded(kind, outcome)
    assert calls == []
    assert outcome.of_type("tool_result")[0]["result"]["isError"] is True
