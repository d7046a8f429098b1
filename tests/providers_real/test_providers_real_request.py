"""Request bodies: every content block is sent or refused by name, never dropped."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from providers_real_support import (
    BASE_URL,
    CANARY_KEY,
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    sse_lines,
    sse_response,
)

from prism.errors import ConfigError
from prism.providers.openai_compatible import (
    CachePolicy,
    RequestPolicy,
    create_openai_compatible_provider,
)
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio

OK_BODY = sse_lines([chunk(content="ok", finish="stop")])


def full_request() -> dict[str, Any]:
    return {
        "model": {"provider": "openai-compatible", "model": "demo-model"},
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "canary-system"}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "canary-user"},
                    {"type": "image", "url": "https://example.invalid/canary.png"},
                    {"type": "image", "data": "Y2FuYXJ5", "mimeType": "image/png"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": "canary-thinking", "signature": "sig"},
                    {"type": "text", "text": "canary-assistant"},
                    {
                        "type": "tool_call",
                        "id": "call_canary",
                        "name": "lookup_canary",
                        "arguments": {"q": "canary-arg"},
                    },
                    {"type": "tool_call", "id": "call_2", "name": "fail", "arguments": {}},
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": "call_canary",
                        "name": "lookup_canary",
                        "result": {"answer": "canary-result", "n": 42},
                    },
                    {
                        "type": "tool_result",
                        "toolCallId": "call_2",
                        "name": "fail",
                        "result": "boom",
                        "isError": True,
                    },
                ],
            },
        ],
        "tools": [
            {
                "name": "lookup_canary",
                "description": "Look things up",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
            {"name": "fail"},
        ],
    }


async def _send(request: dict[str, Any], **kwargs: Any) -> tuple[Recorder, list[dict[str, Any]]]:
    recorder = Recorder(lambda: sse_response(OK_BODY))
    events = await collect(make_provider(recorder, **kwargs), request)
    return recorder, events


async def test_every_block_is_serialized() -> None:
    recorder, events = await _send(
        full_request(), request_policy=RequestPolicy(thinking="reasoning_content")
    )
    assert events[-1]["type"] == "done"
    body = recorder.bodies[0]
    assert body["model"] == "demo-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "canary-system"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "canary-user"},
                {"type": "image_url", "image_url": {"url": "https://example.invalid/canary.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,Y2FuYXJ5"}},
            ],
        },
        {
            "role": "assistant",
            "content": "canary-assistant",
            "reasoning_content": "canary-thinking",
            "tool_calls": [
                {
                    "id": "call_canary",
                    "type": "function",
                    "function": {"name": "lookup_canary", "arguments": '{"q":"canary-arg"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "fail", "arguments": "{}"},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_canary",
            "content": '{"answer":"canary-result","n":42}',
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: boom"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_canary",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                "description": "Look things up",
            },
        },
        {
            "type": "function",
            "function": {"name": "fail", "parameters": {"type": "object", "properties": {}}},
        },
    ]


async def test_serialized_request_covers_content_helper() -> None:
    import prism.testing as testing

    request = full_request()
    recorder, _ = await _send(request, request_policy=RequestPolicy(thinking="reasoning_content"))
    testing.assert_serialized_request_covers_content(request, recorder.bodies[0])
    recorder, _ = await _send(request, request_policy=RequestPolicy(thinking="omit"))
    testing.assert_serialized_request_covers_content(
        request, recorder.bodies[0], unsupported=["thinking"]
    )


async def test_thinking_is_refused_by_default_and_nothing_is_sent() -> None:
    recorder, events = await _send(full_request())
    assert recorder.requests == []
    assert len(events) == 1
    error = events[0]["error"]
    assert error["code"] == "unsupported_content"
    assert error["retryable"] is False
    assert "cannot send a 'thinking' block in messages[2] (role assistant)" in error["message"]
    assert "thinking='refuse'" in error["message"]


async def test_thinking_policies_omit_and_reasoning_field() -> None:
    recorder, _ = await _send(full_request(), request_policy=RequestPolicy(thinking="omit"))
    assistant = recorder.bodies[0]["messages"][2]
    assert "reasoning_content" not in assistant and "reasoning" not in assistant
    recorder, _ = await _send(full_request(), request_policy=RequestPolicy(thinking="reasoning"))
    assert recorder.bodies[0]["messages"][2]["reasoning"] == "canary-thinking"


@pytest.mark.parametrize(
    ("role", "block", "expected"),
    [
        (
            "assistant",
            {"type": "image", "url": "u"},
            "cannot send a 'image' block in messages[0] (role assistant)",
        ),
        (
            "system",
            {"type": "image", "url": "u"},
            "cannot send a 'image' block in messages[0] (role system)",
        ),
        (
            "user",
            {"type": "tool_call", "id": "c", "name": "n", "arguments": {}},
            "cannot send a 'tool_call' block in messages[0] (role user)",
        ),
        (
            "user",
            {"type": "thinking", "text": "t"},
            "cannot send a 'thinking' block in messages[0] (role user)",
        ),
        (
            "user",
            {"type": "audio", "data": "x"},
            "cannot send a 'audio' block in messages[0] (role user)",
        ),
        (
            "tool",
            {"type": "text", "text": "t"},
            "cannot send a 'text' block in messages[0] (role tool)",
        ),
        ("user", {"type": "image"}, "image block in messages[0] needs url, or data with mimeType"),
        ("assistant", {"type": "tool_call", "name": "n"}, "needs id and name"),
        ("tool", {"type": "tool_result", "name": "n", "result": 1}, "needs toolCallId"),
    ],
)
async def test_unsendable_blocks_are_refused_by_name(
    role: str, block: dict[str, Any], expected: str
) -> None:
    request = {
        "model": {"provider": "p", "model": "m"},
        "messages": [{"role": role, "content": [block]}],
    }
    recorder, events = await _send(request)
    assert recorder.requests == []
    assert [e["type"] for e in events] == ["error"]
    assert expected in events[0]["error"]["message"]


async def test_bad_message_shapes_are_refused() -> None:
    for messages, expected in [
        ([{"role": "narrator", "content": []}], "unknown role 'narrator'"),
        ([{"role": "user", "content": "hi"}], "content must be a list of blocks"),
        ([{"role": "tool", "content": []}], "tool message with no tool_result"),
    ]:
        _, events = await _send({"model": {"provider": "p", "model": "m"}, "messages": messages})
        assert expected in events[0]["error"]["message"]
    _, events = await _send({"model": {"provider": "p"}, "messages": []})
    assert "request.model.model must be a model name string" in events[0]["error"]["message"]


async def test_tool_results_inside_a_user_message_become_tool_messages_first() -> None:
    request = {
        "model": {"provider": "p", "model": "m"},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "and also"},
                    {"type": "tool_result", "toolCallId": "c1", "name": "f", "result": [1, 2]},
                ],
            }
        ],
    }
    recorder, _ = await _send(request)
    assert recorder.bodies[0]["messages"] == [
        {"role": "tool", "tool_call_id": "c1", "content": "[1,2]"},
        {"role": "user", "content": "and also"},
    ]


async def test_options_map_to_body_fields() -> None:
    request = simple_request()
    request["options"] = {
        "temperature": 0.2,
        "topP": 0.9,
        "maxTokens": 256,
        "stop": ["END"],
        "seed": 7,
        "reasoningEffort": "low",
        "toolChoice": {"name": "lookup"},
        "somethingElse": "not sent",
        "extraBody": {"vendor_flag": True},
    }
    recorder, _ = await _send(
        request,
        request_policy=RequestPolicy(
            max_tokens_field="max_completion_tokens", extra_body={"policy_flag": 1}
        ),
    )
    body = recorder.bodies[0]
    assert body["temperature"] == 0.2 and body["top_p"] == 0.9
    assert body["max_completion_tokens"] == 256 and "max_tokens" not in body
    assert body["stop"] == ["END"] and body["seed"] == 7
    assert body["reasoning_effort"] == "low"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["vendor_flag"] is True and body["policy_flag"] == 1
    assert "somethingElse" not in body and "extraBody" not in body


async def test_model_options_are_defaults_that_request_options_override() -> None:
    request = simple_request()
    request["model"]["options"] = {"temperature": 1.0, "maxTokens": 10}
    request["options"] = {"temperature": 0.0}
    recorder, _ = await _send(request)
    assert recorder.bodies[0]["temperature"] == 0.0
    assert recorder.bodies[0]["max_tokens"] == 10


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"maxTokens": 0}, "maxTokens must be a positive integer"),
        ({"maxTokens": "lots"}, "maxTokens must be a positive integer"),
        ({"toolChoice": "sometimes"}, "toolChoice must be"),
        ({"extraBody": [1]}, "extraBody must be an object"),
    ],
)
async def test_bad_options_are_refused(options: dict[str, Any], expected: str) -> None:
    request = simple_request()
    request["options"] = options
    recorder, events = await _send(request)
    assert recorder.requests == []
    assert expected in events[0]["error"]["message"]


async def test_prompt_cache_key_from_session_or_option() -> None:
    request = simple_request()
    request["metadata"] = {"sessionId": "sess-1"}
    recorder, _ = await _send(request, cache_policy=CachePolicy(mode="prompt_cache_key"))
    assert recorder.bodies[0]["prompt_cache_key"] == "sess-1"
    request["options"] = {"cacheKey": "explicit"}
    recorder, _ = await _send(request, cache_policy=CachePolicy(mode="prompt_cache_key"))
    assert recorder.bodies[0]["prompt_cache_key"] == "explicit"
    recorder, _ = await _send(request)
    assert "prompt_cache_key" not in recorder.bodies[0]


async def test_include_usage_can_be_turned_off() -> None:
    recorder, _ = await _send(simple_request(), request_policy=RequestPolicy(include_usage=False))
    assert "stream_options" not in recorder.bodies[0]


async def test_headers_auth_and_url() -> None:
    recorder, _ = await _send(simple_request(), headers={"X-Custom": "1"})
    sent = recorder.requests[0]
    assert str(sent.url) == BASE_URL + "/chat/completions"
    assert sent.method == "POST"
    assert sent.headers["authorization"] == f"Bearer {CANARY_KEY}"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.headers["x-custom"] == "1"


async def test_no_key_sends_no_auth_header_and_custom_auth_header() -> None:
    recorder, _ = await _send(simple_request(), api_key=None)
    assert "authorization" not in recorder.requests[0].headers
    recorder, _ = await _send(simple_request(), auth_header="api-key", auth_scheme=None)
    assert recorder.requests[0].headers["api-key"] == CANARY_KEY


def test_policy_validation() -> None:
    with pytest.raises(ConfigError, match=r"request_policy\.thinking must be one of"):
        RequestPolicy(thinking="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_tokens_field must be one of"):
        RequestPolicy(max_tokens_field="limit")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"cache_policy\.mode must be one of"):
        CachePolicy(mode="forever")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown request policy keys: bogus"):
        RequestPolicy.from_json({"bogus": 1})
    assert RequestPolicy.from_json(
        {"thinking": "omit", "maxTokensField": "max_completion_tokens"}
    ) == RequestPolicy(thinking="omit", max_tokens_field="max_completion_tokens")
    assert CachePolicy.from_json({"mode": "none"}) == CachePolicy(mode="none")


def test_every_request_policy_reads_its_camel_case_keys_and_names_the_unknown_ones() -> None:
    from prism.providers.openai_responses import ResponsesRequestPolicy

    assert ResponsesRequestPolicy.from_json(
        {"foreignReasoning": "send", "includeEncryptedReasoning": False, "store": True}
    ) == ResponsesRequestPolicy(
        store=True, foreign_reasoning="send", include_encrypted_reasoning=False
    )
    with pytest.raises(ConfigError, match="unknown request policy keys: a, foreign_reasoning"):
        ResponsesRequestPolicy.from_json({"foreign_reasoning": "send", "a": 1})


def test_factory_validation() -> None:
    client = httpx.AsyncClient()
    with pytest.raises(ConfigError, match="base_url must be an http"):
        create_openai_compatible_provider(base_url="ftp://x", api_key="k", redactor=NOOP_REDACTOR)
    with pytest.raises(ConfigError, match="api_key or credential, not both"):
        create_openai_compatible_provider(
            base_url=BASE_URL, api_key="k", credential="c", redactor=NOOP_REDACTOR
        )
    with pytest.raises(ConfigError, match="api_key must be a non-empty string"):
        create_openai_compatible_provider(base_url=BASE_URL, api_key="", redactor=NOOP_REDACTOR)
    with pytest.raises(ConfigError, match=r"http_client must be an httpx\.AsyncClient"):
        create_openai_compatible_provider(
            base_url=BASE_URL, http_client=object(), redactor=NOOP_REDACTOR
        )  # type: ignore[arg-type]
    provider = create_openai_compatible_provider(
        base_url=BASE_URL + "/", http_client=client, redactor=NOOP_REDACTOR
    )
    assert provider.url == BASE_URL + "/chat/completions"
    assert CANARY_KEY not in repr(provider)


async def test_owned_client_is_created_lazily_and_closed() -> None:
    provider = create_openai_compatible_provider(
        base_url=BASE_URL, api_key="sk-long-enough", redactor=NOOP_REDACTOR
    )
    async with provider:
        pass
    assert provider._client is None  # never created, nothing to close


async def test_explicit_timeout_wins_else_the_clients_own() -> None:
    recorder, _ = await _send(simple_request(), timeout=5.0)
    assert recorder.requests[0].extensions["timeout"]["read"] == 5.0
    recorder = Recorder(lambda: sse_response(OK_BODY))
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder), timeout=33.0)
    provider = create_openai_compatible_provider(
        base_url=BASE_URL, api_key=CANARY_KEY, http_client=client, redactor=NOOP_REDACTOR
    )
    await collect(provider, simple_request())
    assert recorder.requests[0].extensions["timeout"]["read"] == 33.0


async def test_assistant_content_is_null_only_beside_tool_calls() -> None:
    request = {
        "model": {"provider": "p", "model": "m"},
        "messages": [
            {"role": "assistant", "content": [{"type": "thinking", "text": "t"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": "c", "name": "f", "arguments": {}}],
            },
        ],
    }
    recorder, _ = await _send(request, request_policy=RequestPolicy(thinking="omit"))
    first, second = recorder.bodies[0]["messages"]
    assert first == {"role": "assistant", "content": ""}
    assert second["content"] is None and second["tool_calls"][0]["id"] == "c"


@pytest.mark.parametrize("call", [{"name": "n"}, {"id": "c1"}, {"id": "", "name": "n"}])
def test_every_adapter_refuses_a_history_tool_call_without_id_or_name(
    call: dict[str, Any],
) -> None:
    from prism.providers._anthropic_request import AnthropicRequestPolicy, build_messages_body
    from prism.providers._http_stream import RequestSerializationError
    from prism.providers._responses_request import ResponsesRequestPolicy, build_responses_body

    request: Any = {
        "model": {"provider": "p", "model": "m"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "tool_call", **call}]},
        ],
    }
    expected = r"tool_call block in messages\[1\] needs id and name"
    with pytest.raises(RequestSerializationError, match=expected):
        build_messages_body(
            request, policy=AnthropicRequestPolicy(), default_options={}, prefix_memory=None
        )
    with pytest.raises(RequestSerializationError, match=expected):
        build_responses_body(request, policy=ResponsesRequestPolicy(), default_options={})


def test_every_adapter_refuses_a_request_without_a_model_name() -> None:
    from prism.providers._anthropic_request import AnthropicRequestPolicy, build_messages_body
    from prism.providers._http_stream import RequestSerializationError
    from prism.providers._responses_request import ResponsesRequestPolicy, build_responses_body

    request: Any = {"model": {"provider": "p"}, "messages": []}
    expected = "request.model.model must be a model name string"
    with pytest.raises(RequestSerializationError, match=expected):
        build_messages_body(
            request, policy=AnthropicRequestPolicy(), default_options={}, prefix_memory=None
        )
    with pytest.raises(RequestSerializationError, match=expected):
        build_responses_body(request, policy=ResponsesRequestPolicy(), default_options={})
