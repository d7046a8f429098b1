"""The prism.testing conformance helpers pass on the OpenAI-compatible adapter."""

from __future__ import annotations

import json

import anyio
import pytest
from providers_real_support import (
    CANARY_KEY,
    ByteStream,
    Recorder,
    chunk,
    make_provider,
    simple_request,
    split_every,
    sse_lines,
    sse_response,
)

from prism.providers.base import AIProvider
from prism.testing import (
    assert_abort_is_observed,
    assert_no_secret_leak,
    assert_provider_stream_conforms,
    assert_tool_call_deltas_reconstruct,
    assert_usage_accounting,
    collect_provider_events,
)

pytestmark = pytest.mark.anyio

USAGE = {
    "prompt_tokens": 40,
    "completion_tokens": 12,
    "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 2},
    "completion_tokens_details": {"reasoning_tokens": 3},
}

TOOL_STREAM = sse_lines(
    [
        chunk(reasoning="plan"),
        chunk(content="Hello"),
        chunk(
            tool_calls=[
                {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": '{"id"'}}
            ]
        ),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": ': "42"}'}}]),
        chunk(finish="tool_calls"),
        chunk(no_choices=True, usage=USAGE),
    ]
)


def _provider(body: bytes = TOOL_STREAM, **kwargs: object) -> AIProvider:
    return make_provider(
        Recorder(lambda: sse_response(ByteStream(split_every(body, 17)))), **kwargs
    )


def test_adapter_satisfies_the_provider_protocol() -> None:
    assert isinstance(_provider(), AIProvider)


async def test_stream_conforms_with_text_usage_and_stop_reason() -> None:
    events = await assert_provider_stream_conforms(
        _provider(),
        simple_request(),
        expect_text="Hello",
        expect_usage={"inputTokens": 40, "cacheReadTokens": 10, "cacheWriteTokens": 2},
        expect_stop_reason="tool_calls",
    )
    assert_tool_call_deltas_reconstruct(
        events, [{"id": "call_1", "name": "lookup", "arguments": {"id": "42"}}]
    )
    assert_usage_accounting(events, {"outputTokens": 12, "reasoningTokens": 3})


@pytest.mark.parametrize(
    "response",
    [
        lambda: sse_response(sse_lines([chunk(content="x")], done=False)),
        lambda: sse_response(b"data: {oops\n\n"),
        lambda: __import__("httpx").Response(429, json={"error": {"message": "slow"}}),
    ],
)
async def test_failures_still_end_with_one_terminal_error(response: object) -> None:
    provider = make_provider(Recorder(response))  # type: ignore[arg-type]
    events = await assert_provider_stream_conforms(provider, simple_request(), allow_error=True)
    assert events[-1]["type"] == "error"


async def test_abort_before_the_first_event_is_observed() -> None:
    assert await assert_abort_is_observed(_provider(), simple_request()) == []


async def test_abort_mid_stream_is_observed() -> None:
    body = sse_lines([chunk(content="a"), chunk(content="b")], done=False)
    stream = ByteStream([body], hang=anyio.sleep_forever)
    provider = make_provider(Recorder(sse_response(stream)))
    received = await assert_abort_is_observed(provider, simple_request(), after_events=1)
    assert [e["type"] for e in received] == ["content_delta"]
    assert stream.closed


async def test_no_secret_leaks_from_errors_that_echo_the_key() -> None:
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {CANARY_KEY}"}})
    for response in (
        lambda: __import__("httpx").Response(401, text=echo),
        lambda: sse_response(sse_lines([json.loads(echo)], done=False)),
    ):
        events = await collect_provider_events(
            make_provider(Recorder(response)),
            simple_request(),  # type: ignore[arg-type]
        )
        assert events[-1]["type"] == "error"
        assert_no_secret_leak(events, [CANARY_KEY])
