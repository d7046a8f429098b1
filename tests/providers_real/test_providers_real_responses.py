"""The OpenAI Responses adapter against streams served by httpx.MockTransport:
stateless requests, reasoning items with encrypted content carried across
turns, function calls and outputs, usage with cached tokens, bad input."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from providers_real_support import CANARY_KEY, ByteStream, Recorder, split_every, sse_response

from prism.providers._responses_request import ENVELOPE_PREFIX, ResponsesRequestPolicy
from prism.providers.openai_responses import (
    OpenAIResponsesProvider,
    create_openai_responses_provider,
)
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing import (
    assert_abort_is_observed,
    assert_no_secret_leak,
    assert_provider_stream_conforms,
    assert_tool_call_deltas_reconstruct,
    collect_provider_events,
)

pytestmark = pytest.mark.anyio

MODEL = {"provider": "openai-responses", "model": "gpt-5"}
USAGE = {
    "input_tokens": 1200,
    "input_tokens_details": {"cached_tokens": 1024},
    "output_tokens": 50,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 1250,
}
REASONING_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Plan."}],
    "encrypted_content": "gAAAA-opaque",
}


def body(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def completed(
    status: str = "completed", usage: dict[str, Any] | None = USAGE, **extra: Any
) -> dict[str, Any]:
    response: dict[str, Any] = {"id": "resp_1", "status": status, "usage": usage, **extra}
    return {"type": "response.completed", "response": response}


def text_events(text: str = "Hello world") -> list[dict[str, Any]]:
    return [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1"},
        },
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Plan."},
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING_ITEM},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"type": "message", "id": "msg_1"},
        },
        {"type": "response.output_text.delta", "output_index": 1, "delta": text[:5]},
        {"type": "response.output_text.delta", "output_index": 1, "delta": text[5:]},
        {"type": "response.output_item.done", "output_index": 1, "item": {"type": "message"}},
        completed(),
    ]


def call_events(arguments: str = '{"city":"Paris"}') -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather"}
    return [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "delta": arguments[:6],
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "delta": arguments[6:],
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": arguments},
        },
        completed(),
    ]


def served(*streams: list[dict[str, Any]]) -> Recorder:
    return Recorder(
        *(lambda s=s: sse_response(ByteStream(split_every(body(s), 11))) for s in streams)
    )


def provider(recorder: Recorder, **kwargs: Any) -> OpenAIResponsesProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    return create_openai_responses_provider(
        base_url="https://oai.example.invalid/v1",
        api_key=CANARY_KEY,
        http_client=client,
        redactor=kwargs.pop("redactor", NOOP_REDACTOR),
        **kwargs,
    )


def request(
    *messages: dict[str, Any], model: dict[str, Any] = MODEL, **extra: Any
) -> dict[str, Any]:
    msgs = list(messages) or [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    return {"model": model, "messages": msgs, **extra}


async def test_text_and_reasoning_stream_conforms_with_cached_usage() -> None:
    recorder = served(text_events())
    events = await assert_provider_stream_conforms(
        provider(recorder),
        request(),
        expect_text="Hello world",
        expect_stop_reason="stop",
        expect_usage={
            "inputTokens": 1200,
            "cacheReadTokens": 1024,
            "outputTokens": 50,
            "reasoningTokens": 30,
            "totalTokens": 1250,
        },
    )
    sent = recorder.bodies[0]
    assert (sent["store"], sent["stream"], sent["include"]) == (
        False,
        True,
        ["reasoning.encrypted_content"],
    )
    assert sent["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}
    ]
    assert recorder.requests[0].headers["authorization"] == f"Bearer {CANARY_KEY}"
    thinking = [e for e in events if e["type"] == "thinking_delta"]
    assert thinking[0]["text"] == "Plan."
    assert thinking[-1]["signature"].startswith(ENVELOPE_PREFIX)


async def test_reasoning_items_and_function_calls_are_carried_across_turns() -> None:
    recorder = served(text_events(), call_events(), text_events("Sunny"))
    agent = create_agent(model=MODEL, provider=provider(recorder), tools=[_weather_tool()])
    session = agent.create_session()
    await session.run("first")
    result = await session.run("weather?")
    assert result.text == "Sunny"
    second, third = recorder.bodies[1]["input"], recorder.bodies[2]["input"]
    # Turn 2 sends turn 1's reasoning item verbatim (id and encrypted content).
    assert second[1] == REASONING_ITEM
    assert second[2] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello world"}],
    }
    calls = [i for i in third if i["type"] == "function_call"]
    outputs = [i for i in third if i["type"] == "function_call_output"]
    assert calls == [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        }
    ]
    assert outputs == [{"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]


def _weather_tool() -> Any:
    from prism.tools import define_tool

    return define_tool("get_weather", lambda args, ctx: "sunny", parameters={"type": "object"})


async def test_function_call_deltas_reconstruct() -> None:
    events = await collect_provider_events(provider(served(call_events())), request())
    expected = [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert_tool_call_deltas_reconstruct(events, expected)
    assert [e["toolCall"] for e in events if e["type"] == "tool_call"] == expected
    assert events[-1]["stopReason"] == "tool_calls"


async def test_function_call_with_broken_arguments_stays_as_deltas() -> None:
    events = await collect_provider_events(
        provider(served(call_events('{"city": "Par'))), request()
    )
    assert not [e for e in events if e["type"] == "tool_call"]
    assert events[-1]["type"] == "done"


async def test_reasoning_from_another_model_is_left_out_by_default() -> None:
    events = await collect_provider_events(provider(served(text_events())), request())
    envelope = [e for e in events if e.get("signature")][-1]["signature"]
    history = [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "Plan.", "signature": envelope},
                {"type": "text", "text": "Hello"},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    other = {"provider": "openai-responses", "model": "o4-mini"}
    omitted = provider(served(text_events())).build_body(request(*history, model=other))
    assert [i["type"] for i in omitted["input"]] == ["message", "message", "message"]
    sent = provider(
        served(text_events()), request_policy=ResponsesRequestPolicy(foreign_reasoning="send")
    ).build_body(request(*history, model=other))
    assert sent["input"][1] == REASONING_ITEM


async def test_server_rejecting_encrypted_reasoning_is_classified() -> None:
    error = {
        "error": {
            "message": "The encrypted content for item rs_1 could not be verified.",
            "type": "invalid_request_error",
            "code": "invalid_encrypted_content",
        }
    }
    events = await collect_provider_events(
        provider(Recorder(httpx.Response(400, json=error))), request()
    )
    info = events[-1]["error"]
    assert (info["code"], info["retryable"], info["status"]) == (
        "invalid_reasoning_item",
        False,
        400,
    )


async def test_damaged_envelope_is_refused() -> None:
    history = request(
        {
            "role": "assistant",
            "content": [{"type": "thinking", "text": "x", "signature": ENVELOPE_PREFIX + "e30="}],
        }
    )
    events = await collect_provider_events(provider(served(text_events())), history)
    assert events[-1]["error"]["code"] == "unsupported_content"
    assert "messages[0]" in events[-1]["error"]["message"]


async def test_failed_response_and_error_events_are_classified() -> None:
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    events = await collect_provider_events(provider(served([failed])), request())
    assert (events[-1]["error"]["code"], events[-1]["error"]["retryable"]) == ("500", True)
    limited = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}
    events = await collect_provider_events(provider(served([limited])), request())
    assert events[-1]["error"]["code"] == "429"


async def test_stream_without_completion_is_incomplete_and_keeps_nothing() -> None:
    events = await collect_provider_events(provider(served(text_events()[:-1])), request())
    assert events[-1]["error"]["code"] == "stream_incomplete"


async def test_missing_usage_and_unknown_events(caplog: pytest.LogCaptureFixture) -> None:
    stream = [{"type": "brand.new.event"}, *text_events()[:-1], completed(usage=None)]
    with caplog.at_level(logging.DEBUG, logger="prism.providers"):
        events = await assert_provider_stream_conforms(
            provider(served(stream)), request(), expect_text="Hello world"
        )
    assert events[-1] == {"type": "done", "stopReason": "stop"}
    assert "brand.new.event" in caplog.text


async def test_incomplete_response_reports_the_reason() -> None:
    stream = [
        *text_events()[:-1],
        completed("incomplete", incomplete_details={"reason": "max_output_tokens"}),
    ]
    events = await collect_provider_events(provider(served(stream)), request())
    assert events[-1]["stopReason"] == "max_output_tokens"


async def test_options_tools_images_and_system_on_the_wire() -> None:
    recorder = served(text_events())
    req = request(
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "data": "AAA=", "mimeType": "image/png"}]},
        tools=[{"name": "get_weather", "parameters": {"type": "object"}}],
        options={"maxTokens": 99, "reasoningEffort": "low", "toolChoice": {"name": "get_weather"},
                 "responseFormat": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
        metadata={"sessionId": "s-1"},
    )  # fmt: skip
    await assert_provider_stream_conforms(provider(recorder), req)
    sent = recorder.bodies[0]
    assert sent["input"][0] == {
        "type": "message",
        "role": "system",
        "content": [{"type": "input_text", "text": "Be brief."}],
    }
    assert sent["input"][1]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,AAA=",
    }
    assert sent["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object"},
        "strict": False,
    }
    assert sent["max_output_tokens"] == 99
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert sent["text"]["format"]["type"] == "json_schema"
    assert sent["prompt_cache_key"] == "s-1"


async def test_key_in_an_error_is_redacted_and_abort_is_observed() -> None:
    error = {
        "error": {"message": f"Incorrect API key provided: {CANARY_KEY}", "code": "invalid_api_key"}
    }
    events = await collect_provider_events(
        provider(Recorder(httpx.Response(401, json=error))), request()
    )
    assert_no_secret_leak(events, [CANARY_KEY])
    await assert_abort_is_observed(provider(served(text_events())), request(), after_events=1)


def test_policy_from_json() -> None:
    from prism.errors import ConfigError

    assert ResponsesRequestPolicy.from_json({"store": True}).store is True
    with pytest.raises(ConfigError, match="foreign_reasoning"):
        ResponsesRequestPolicy(foreign_reasoning="keep")  # type: ignore[arg-type]


def test_encrypted_reasoning_can_be_left_out_of_include() -> None:
    policy = ResponsesRequestPolicy.from_json({"includeEncryptedReasoning": False})
    body = provider(served(text_events()), request_policy=policy).build_body(request())
    assert "include" not in body
