"""The Anthropic Messages adapter against streams served by httpx.MockTransport:
text, thinking with signatures, redacted thinking carried back verbatim,
tool use with partial JSON, usage with cache fields, errors and bad input."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from anthropic_support import (
    END,
    USAGE_START,
    block_start,
    delta,
    events_body,
    make_anthropic,
    message_delta,
    request,
    start,
    stop,
    text_stream,
)
from providers_real_support import CANARY_KEY, ByteStream, Recorder, split_every, sse_response

from prism.providers._anthropic_request import ENVELOPE_PREFIX, AnthropicRequestPolicy
from prism.providers.anthropic import map_anthropic_usage
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


def _served(events: list[dict[str, Any]], size: int = 13) -> Recorder:
    body = events_body(events)
    return Recorder(lambda: sse_response(ByteStream(split_every(body, size))))


async def test_text_stream_conforms_with_usage_and_cache_fields() -> None:
    recorder = _served(text_stream())
    provider = make_anthropic(recorder)
    events = await assert_provider_stream_conforms(
        provider,
        request(),
        expect_text="Hello there",
        expect_stop_reason="end_turn",
        expect_usage={
            "inputTokens": 1010,
            "cacheReadTokens": 900,
            "cacheWriteTokens": 100,
            "outputTokens": 7,
            "totalTokens": 1017,
        },
    )
    assert events[-1]["type"] == "done"
    sent = recorder.requests[0]
    assert sent.headers["x-api-key"] == CANARY_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert str(sent.url) == "https://anthropic.example.invalid/v1/messages"
    assert recorder.bodies[0]["stream"] is True
    assert recorder.bodies[0]["max_tokens"] == 4096


def test_usage_mapping_counts_every_token_once() -> None:
    assert map_anthropic_usage({"input_tokens": 5, "output_tokens": 2}) == {
        "inputTokens": 5,
        "outputTokens": 2,
        "totalTokens": 7,
    }


async def test_thinking_with_signature_is_streamed_and_sent_back() -> None:
    stream = [
        start(USAGE_START),
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, type="thinking_delta", thinking="Let me "),
        delta(0, type="thinking_delta", thinking="think."),
        delta(0, type="signature_delta", signature="sig-abc"),
        stop(0),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, type="text_delta", text="Answer"),
        stop(1),
        message_delta("end_turn", {"output_tokens": 9}),
        END,
    ]
    recorder = _served(stream)
    provider = make_anthropic(recorder)
    agent = create_agent(model=request()["model"], provider=provider)
    session = agent.create_session()
    await session.run("question")
    assistant = (await session.messages())[-1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "text": "Let me think.",
        "signature": "sig-abc",
    }
    await session.run("again")
    sent = recorder.bodies[1]["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"][0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "sig-abc",
    }


async def test_redacted_thinking_and_several_blocks_go_back_verbatim() -> None:
    stream = [
        start(USAGE_START),
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, type="thinking_delta", thinking="first"),
        delta(0, type="signature_delta", signature="sig-1"),
        stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB=="}),
        stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}),
        delta(2, type="input_json_delta", partial_json='{"q": '),
        delta(2, type="input_json_delta", partial_json='"x"}'),
        stop(2),
        message_delta("tool_use", {"output_tokens": 20}),
        END,
    ]
    provider = make_anthropic(_served(stream))
    events = await collect_provider_events(provider, request())
    signatures = [
        e["signature"] for e in events if e["type"] == "thinking_delta" and e.get("signature")
    ]
    assert signatures[0] == "sig-1"
    envelope = signatures[-1]
    assert envelope.startswith(ENVELOPE_PREFIX)
    assert_tool_call_deltas_reconstruct(
        events, [{"id": "toolu_1", "name": "lookup", "arguments": {"q": "x"}}]
    )
    calls = [e["toolCall"] for e in events if e["type"] == "tool_call"]
    assert calls == [{"id": "toolu_1", "name": "lookup", "arguments": {"q": "x"}}]
    history = request(
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "first", "signature": envelope},
                {"type": "tool_call", "id": "toolu_1", "name": "lookup", "arguments": {"q": "x"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "toolu_1",
                    "name": "lookup",
                    "result": {"a": 1},
                }
            ],
        },
    )
    body = provider.build_body(history)
    assert body["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "first", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB=="},
    ]
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    assert body["messages"][2]["content"][0]["content"] == '{"a":1}'


async def test_damaged_envelope_is_refused_naming_the_message() -> None:
    provider = make_anthropic(_served(text_stream()))
    history = request(
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "text": "x", "signature": ENVELOPE_PREFIX + "!!"}],
        },
    )
    events = await collect_provider_events(provider, history)
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "unsupported_content"
    assert "messages[1]" in events[-1]["error"]["message"]


async def test_bad_thinking_signature_answered_by_the_server_is_classified() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.1.content.0: Invalid `signature` in `thinking` block",
        },
    }
    provider = make_anthropic(Recorder(httpx.Response(400, json=body)))
    events = await collect_provider_events(provider, request())
    info = events[-1]["error"]
    assert info["code"] == "invalid_thinking_signature"
    assert info["retryable"] is False
    assert info["status"] == 400


async def test_bad_signature_in_the_stream_is_an_error_not_a_block() -> None:
    stream = [
        start(USAGE_START),
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, type="thinking_delta", thinking="t"),
        delta(0, type="signature_delta", signature=None),
    ]
    provider = make_anthropic(_served(stream))
    events = await collect_provider_events(provider, request())
    assert events[-1]["error"]["code"] == "invalid_thinking_signature"
    assert events[-1]["error"]["details"]["usage"]["inputTokens"] == 1010


async def test_tool_use_whose_json_never_completes_becomes_invalid_arguments() -> None:
    stream = [
        start(USAGE_START),
        block_start(0, {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"q": "unterminated'),
        stop(0),
        message_delta("tool_use", {"output_tokens": 5}),
        END,
    ]
    events = await collect_provider_events(make_anthropic(_served(stream)), request())
    assert not [e for e in events if e["type"] == "tool_call"]
    deltas = [e for e in events if e["type"] == "tool_call_delta"]
    assert deltas[0] == {"type": "tool_call_delta", "index": 0, "name": "lookup", "id": "toolu_9"}
    assert events[-1] == {
        "type": "done",
        "stopReason": "tool_use",
        "usage": map_anthropic_usage({**USAGE_START, "output_tokens": 5}),
    }


async def test_tool_use_cut_off_by_the_end_of_stream_is_incomplete() -> None:
    stream = [
        start(USAGE_START),
        block_start(0, {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"q": '),
    ]
    events = await collect_provider_events(make_anthropic(_served(stream)), request())
    assert events[-1]["error"]["code"] == "stream_incomplete"
    assert events[-1]["error"]["retryable"] is True


async def test_unknown_event_type_is_skipped_with_a_debug_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stream = text_stream()
    stream.insert(2, {"type": "content_block_flux", "index": 0})
    with caplog.at_level(logging.DEBUG, logger="prism.providers"):
        await assert_provider_stream_conforms(
            make_anthropic(_served(stream)), request(), expect_text="Hello there"
        )
    assert "content_block_flux" in caplog.text


async def test_missing_usage_gives_done_without_usage(caplog: pytest.LogCaptureFixture) -> None:
    stream = [
        start(None),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="ok"),
        stop(0),
        message_delta("end_turn"),
        END,
    ]
    with caplog.at_level(logging.DEBUG, logger="prism.providers"):
        events = await assert_provider_stream_conforms(make_anthropic(_served(stream)), request())
    assert events[-1] == {"type": "done", "stopReason": "end_turn"}
    assert not [e for e in events if e["type"] == "usage"]
    assert "no usage" in caplog.text


@pytest.mark.parametrize("retry_after", ["2", None])
async def test_529_overload_is_retryable_with_retry_after(retry_after: str | None) -> None:
    headers = {"retry-after": retry_after} if retry_after else {}
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    provider = make_anthropic(Recorder(httpx.Response(529, json=body, headers=headers)))
    events = await collect_provider_events(provider, request())
    info = events[-1]["error"]
    assert (info["code"], info["retryable"]) == ("529", True)
    assert info["details"]["providerCode"] == "overloaded_error"
    assert info.get("retryAfterMs") == (2000 if retry_after else None)


async def test_529_storm_ends_after_max_attempts_with_backoff() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    recorder = Recorder(httpx.Response(529, json=body, headers={"retry-after": "0"}))
    from prism.errors import ProviderError
    from prism.retry import RetryOptions

    agent = create_agent(
        model=request()["model"],
        provider=make_anthropic(recorder),
        retry=RetryOptions(max_attempts=4, base_delay_ms=1, seed=1),
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    with pytest.raises(ProviderError) as raised:
        await session.run("storm")
    assert raised.value.info["code"] == "529"
    assert len(recorder.requests) == 4
    assert len([e for e in events if e["type"] == "retry_scheduled"]) == 3


async def test_overload_inside_the_stream_is_classified_as_529() -> None:
    stream = [
        start(USAGE_START),
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
    ]
    events = await collect_provider_events(make_anthropic(_served(stream)), request())
    info = events[-1]["error"]
    assert (info["code"], info["status"], info["retryable"]) == ("529", 529, True)


async def test_system_images_tools_and_options_on_the_wire() -> None:
    recorder = _served(text_stream())
    provider = make_anthropic(recorder)
    req = request(
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "data": "iVBORw0=", "mimeType": "image/png"},
                {"type": "image", "url": "https://example.invalid/a.png"},
            ],
        },
        tools=[{"name": "lookup", "description": "find", "parameters": {"type": "object"}}],
        options={
            "temperature": 0.2,
            "maxTokens": 64,
            "toolChoice": "required",
            "thinkingBudget": 2048,
        },
    )
    await assert_provider_stream_conforms(provider, req)
    body = recorder.bodies[0]
    assert body["system"][0]["text"] == "Be brief."
    assert body["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="},
    }
    assert body["messages"][0]["content"][2]["source"] == {
        "type": "url",
        "url": "https://example.invalid/a.png",
    }
    assert body["tools"] == [
        {"name": "lookup", "input_schema": {"type": "object"}, "description": "find"}
    ]
    assert (body["temperature"], body["max_tokens"]) == (0.2, 64)
    assert body["tool_choice"] == {"type": "any"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_image_in_an_assistant_message_is_refused() -> None:
    req = request(
        {"role": "assistant", "content": [{"type": "image", "url": "https://x.invalid/a.png"}]}
    )
    events = await collect_provider_events(make_anthropic(_served(text_stream())), req)
    assert events[-1]["error"]["code"] == "unsupported_content"
    assert "messages[0]" in events[-1]["error"]["message"]


async def test_key_echoed_in_an_error_is_redacted() -> None:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"bad key {CANARY_KEY}"},
    }
    events = await collect_provider_events(
        make_anthropic(Recorder(httpx.Response(401, json=body))), request()
    )
    assert_no_secret_leak(events, [CANARY_KEY])
    assert events[-1]["error"]["code"] == "401"


async def test_abort_is_observed() -> None:
    await assert_abort_is_observed(
        make_anthropic(_served(text_stream(), size=4)), request(), after_events=1
    )


async def test_stall_counts_from_the_last_data_event_not_keepalives() -> None:
    import anyio

    body = events_body(text_stream()[:3])

    async def keep_alive_forever() -> None:
        await anyio.sleep_forever()

    class KeepAlive(ByteStream):
        async def __aiter__(self) -> Any:
            yield body
            for _ in range(1000):
                yield b": keep-alive\n\n"
                await anyio.sleep(0.001)
            await keep_alive_forever()

    provider = make_anthropic(
        Recorder(lambda: sse_response(KeepAlive([]))), timeout=httpx.Timeout(5.0, read=0.2)
    )
    events = await collect_provider_events(provider, request())
    assert events[-1]["error"]["code"] == "ETIMEDOUT"
    assert events[-1]["error"]["details"]["kind"] == "StreamStalled"


async def test_multibyte_text_split_across_chunks_is_whole() -> None:
    text = "héllo 日本語 🎉"
    stream = text_stream(text)
    await assert_provider_stream_conforms(
        make_anthropic(_served(stream, size=3)), request(), expect_text=text
    )


def test_policy_from_json_and_bad_values() -> None:
    from prism.errors import ConfigError

    policy = AnthropicRequestPolicy.from_json({"cacheBreakpoints": [2, -1], "cacheTtl": "1h"})
    assert policy.cache_breakpoints == (2, -1)
    with pytest.raises(ConfigError, match="cache_breakpoints"):
        AnthropicRequestPolicy(cache_breakpoints="everywhere")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown request policy keys: nope"):
        AnthropicRequestPolicy.from_json({"nope": 1})
    json.dumps(policy.extra_body)


def test_package_lists_models_with_cache_prices() -> None:
    from prism.errors import ConfigError, UnknownNameError
    from prism.providers import AnthropicProvider
    from prism.providers.packages import anthropic_model, create_anthropic_package_provider

    sonnet = anthropic_model("claude-sonnet-4-5")
    assert sonnet["pricing"] == {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
    assert anthropic_model()["model"] == "claude-sonnet-4-5"
    with pytest.raises(UnknownNameError, match="claude-haiku-4-5"):
        anthropic_model("claude-9")
    assert anthropic_model("claude-9", custom=True) == {
        "provider": "anthropic",
        "model": "claude-9",
    }
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        create_anthropic_package_provider(redactor=NOOP_REDACTOR)
    provider = create_anthropic_package_provider(
        env={"ANTHROPIC_API_KEY": CANARY_KEY}, redactor=NOOP_REDACTOR
    )
    assert isinstance(provider, AnthropicProvider)
    assert provider.url == "https://api.anthropic.com/v1/messages"


async def test_the_agents_redactor_runs_after_the_providers_own() -> None:
    from prism.security.redaction import create_redactor

    host_secret = "host-secret-value-0123456789"
    body = {
        "type": "error",
        "error": {"type": "api_error", "message": f"{host_secret} and {CANARY_KEY}"},
    }
    provider = make_anthropic(
        Recorder(httpx.Response(500, json=body)), redactor=create_redactor([host_secret])
    )
    events = await collect_provider_events(provider, request())
    assert_no_secret_leak(events, [host_secret, CANARY_KEY])
    assert events[-1]["error"]["message"].count("[REDACTED]") == 2


async def test_missing_credential_is_a_credential_error_and_nothing_is_sent() -> None:
    from prism.security.credentials import env_credential

    recorder = _served(text_stream())
    provider = make_anthropic(
        recorder, api_key=None, credential=env_credential({}, "ANTHROPIC_API_KEY")
    )
    events = await collect_provider_events(provider, request())
    assert events == [
        {
            "type": "error",
            "error": {
                "message": events[0]["error"]["message"],
                "code": "credential_error",
                "retryable": False,
            },
        }
    ]
    assert "ANTHROPIC_API_KEY" in events[0]["error"]["message"]
    assert recorder.requests == []


async def test_a_non_stream_response_is_invalid() -> None:
    provider = make_anthropic(Recorder(httpx.Response(200, json={"type": "message"})))
    events = await collect_provider_events(provider, request())
    assert events[-1]["error"]["code"] == "invalid_response"


async def test_connection_refused_is_classified() -> None:
    events = await collect_provider_events(
        make_anthropic(Recorder(httpx.ConnectError("refused", request=None))),  # type: ignore[arg-type]
        request(),
    )
    assert events[-1]["error"]["code"] in ("ECONNRESET", "ECONNREFUSED")
    assert events[-1]["error"]["retryable"] is True


async def test_server_tool_blocks_are_not_client_tool_calls() -> None:
    stream = [
        start(USAGE_START),
        block_start(
            0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
        ),
        delta(0, type="input_json_delta", partial_json='{"query": "x"}'),
        stop(0),
        block_start(
            1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
        ),
        stop(1),
        block_start(2, {"type": "text", "text": ""}),
        delta(2, type="text_delta", text="found"),
        stop(2),
        message_delta("end_turn", {"output_tokens": 3}),
        END,
    ]
    events = await assert_provider_stream_conforms(
        make_anthropic(_served(stream)), request(), expect_text="found"
    )
    assert not [e for e in events if e["type"].startswith("tool_call")]
