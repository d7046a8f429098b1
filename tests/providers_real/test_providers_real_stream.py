"""Streaming: SSE chunks shaped like real Chat Completions streams -> Prism events."""

from __future__ import annotations

import json

import pytest
from providers_real_support import (
    ByteStream,
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    split_every,
    sse_lines,
    sse_response,
)

from prism.providers.openai_compatible import map_usage

pytestmark = pytest.mark.anyio

USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 12},
}


def _full_stream() -> bytes:
    return sse_lines(
        [
            chunk(reasoning="Let me "),
            chunk(reasoning="think."),
            chunk(content="Héllo "),
            chunk(content="wörld 🌍"),
            chunk(finish="stop"),
            chunk(no_choices=True, usage=USAGE),
        ]
    )


def _types(events: list[dict[str, object]]) -> list[object]:
    return [e["type"] for e in events]


@pytest.mark.parametrize("size", [1, 2, 5, 13, 64, 100_000])
async def test_chunks_split_mid_line_and_mid_character_give_the_same_events(size: int) -> None:
    # Splitting bytes at size 1 also cuts multi-byte UTF-8 characters in half.
    body = _full_stream()
    provider = make_provider(Recorder(lambda: sse_response(ByteStream(split_every(body, size)))))
    events = await collect(provider, simple_request())
    assert events == [
        {"type": "thinking_delta", "text": "Let me "},
        {"type": "thinking_delta", "text": "think."},
        {"type": "content_delta", "text": "Héllo "},
        {"type": "content_delta", "text": "wörld 🌍"},
        {"type": "usage", "usage": map_usage(USAGE)},
        {"type": "done", "stopReason": "stop", "usage": map_usage(USAGE)},
    ]


async def test_keep_alive_comments_blank_events_and_crlf_are_ignored() -> None:
    body = (
        b": keep-alive\r\n\r\n"
        b"data: " + json.dumps(chunk(content="a")).encode() + b"\r\n\r\n"
        b": OPENROUTER PROCESSING\n\n"
        b"event: message\ndata: " + json.dumps(chunk(content="b")).encode() + b"\n\n"
        b"data:\n\n"
        b": keep-alive\n\n"
        b"data: " + json.dumps(chunk(finish="stop")).encode() + b"\n\n"
        b"data: [DONE]\n\n"
    )
    provider = make_provider(Recorder(lambda: sse_response(ByteStream(split_every(body, 3)))))
    events = await collect(provider, simple_request())
    assert events == [
        {"type": "content_delta", "text": "a"},
        {"type": "content_delta", "text": "b"},
        {"type": "done", "stopReason": "stop"},
    ]


async def test_reasoning_field_variant_is_thinking_too() -> None:
    body = sse_lines([chunk(reasoning="hmm", reasoning_key="reasoning"), chunk(finish="stop")])
    provider = make_provider(Recorder(sse_response(body)))
    events = await collect(provider, simple_request())
    assert events[0] == {"type": "thinking_delta", "text": "hmm"}


async def test_tool_call_deltas_rebuilt_by_index_across_interleaved_fragments() -> None:
    body = sse_lines(
        [
            chunk(content="Checking."),
            chunk(
                tool_calls=[
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "search", "arguments": ""},
                    },
                ]
            ),
            chunk(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 1,'},
                    }
                ]
            ),
            chunk(tool_calls=[{"index": 1, "function": {"arguments": '{"q": "cats'}}]),
            chunk(tool_calls=[{"index": 0, "function": {"arguments": ' "b": 2}'}}]),
            chunk(tool_calls=[{"index": 1, "function": {"arguments": '"}'}}]),
            chunk(
                tool_calls=[
                    {"index": 2, "id": "call_c", "function": {"name": "now", "arguments": ""}}
                ],
                finish="tool_calls",
            ),
        ]
    )
    provider = make_provider(Recorder(lambda: sse_response(ByteStream(split_every(body, 11)))))
    events = await collect(provider, simple_request())
    deltas = [e for e in events if e["type"] == "tool_call_delta"]
    assert deltas[0] == {"type": "tool_call_delta", "index": 1, "id": "call_b", "name": "search"}
    assert deltas[1] == {
        "type": "tool_call_delta",
        "index": 0,
        "id": "call_a",
        "name": "add",
        "argumentsDelta": '{"a": 1,',
    }
    assert {"type": "tool_call_delta", "index": 0, "argumentsDelta": ' "b": 2}'} in deltas
    calls = [e["toolCall"] for e in events if e["type"] == "tool_call"]
    assert calls == [
        {"id": "call_a", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"id": "call_b", "name": "search", "arguments": {"q": "cats"}},
        {"id": "call_c", "name": "now", "arguments": {}},
    ]
    assert _types(events)[-4:] == ["tool_call", "tool_call", "tool_call", "done"]
    assert events[-1] == {"type": "done", "stopReason": "tool_calls"}


async def test_tool_call_without_id_gets_a_generated_one() -> None:
    body = sse_lines(
        [chunk(tool_calls=[{"index": 0, "function": {"name": "now", "arguments": "{}"}}])]
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    call = next(e["toolCall"] for e in events if e["type"] == "tool_call")
    assert call["id"].startswith("call_") and call["name"] == "now"


async def test_invalid_tool_arguments_stay_as_deltas_for_the_runtime() -> None:
    # Issue 18: not a run failure. The complete call is withheld, the raw
    # text is in the deltas, and the runtime answers with invalid_arguments
    # (tests/runtime/test_runtime_tool_arguments.py). Nothing is dropped silently.
    body = sse_lines(
        [
            chunk(
                tool_calls=[
                    {"index": 0, "id": "c1", "function": {"name": "add", "arguments": '{"a": 1'}}
                ],
                finish="tool_calls",
            )
        ]
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert "tool_call" not in _types(events)
    deltas = [e for e in events if e["type"] == "tool_call_delta"]
    assert deltas == [
        {
            "type": "tool_call_delta",
            "index": 0,
            "id": "c1",
            "name": "add",
            "argumentsDelta": '{"a": 1',
        }
    ]
    assert events[-1] == {"type": "done", "stopReason": "tool_calls"}


async def test_tool_arguments_must_be_an_object() -> None:
    body = sse_lines(
        [
            chunk(
                tool_calls=[{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "[1]"}}]
            )
        ]
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert "tool_call" not in _types(events)
    assert [e.get("argumentsDelta") for e in events if e["type"] == "tool_call_delta"] == ["[1]"]
    assert events[-1]["type"] == "done"


async def test_tool_call_without_a_name_is_an_error() -> None:
    body = sse_lines(
        [chunk(tool_calls=[{"index": 0, "id": "c1", "function": {"arguments": "{}"}}])]
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert events[-1]["error"]["code"] == "invalid_tool_call"


def test_usage_maps_cache_and_reasoning_once() -> None:
    usage = map_usage(USAGE)
    assert usage == {
        "inputTokens": 120,
        "outputTokens": 30,
        "totalTokens": 150,
        "cacheReadTokens": 100,
        "reasoningTokens": 12,
    }
    # Reasoning is part of output, cached part of input: nothing is added twice.
    assert usage["inputTokens"] + usage["outputTokens"] == usage["totalTokens"]


def test_usage_variants_moonshot_top_level_cache_and_cache_writes() -> None:
    assert map_usage({"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 40}) == {
        "inputTokens": 50,
        "outputTokens": 5,
        "totalTokens": 55,
        "cacheReadTokens": 40,
    }
    written = map_usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 8},
        }
    )
    assert written["cacheWriteTokens"] == 8 and "cacheReadTokens" not in written
    assert map_usage({"prompt_tokens": "x", "completion_tokens": None}) == {
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
    }


async def test_last_usage_chunk_wins_and_is_reported_once() -> None:
    body = sse_lines(
        [
            chunk(content="a", usage={"prompt_tokens": 5, "completion_tokens": 1}),
            chunk(content="b", finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2}),
        ]
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    usage_events = [e for e in events if e["type"] == "usage"]
    assert usage_events == [
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}}
    ]


async def test_other_choices_are_ignored() -> None:
    data = chunk(content="zero")
    data["choices"].append({"index": 1, "delta": {"content": "one"}, "finish_reason": None})
    events = await collect(
        make_provider(Recorder(sse_response(sse_lines([data])))), simple_request()
    )
    assert [e.get("text") for e in events if e["type"] == "content_delta"] == ["zero"]


async def test_in_stream_error_object_becomes_a_classified_error() -> None:
    body = sse_lines(
        [
            chunk(content="par"),
            {"error": {"code": 502, "message": "upstream provider returned 502"}},
        ],
        done=False,
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert events[0] == {"type": "content_delta", "text": "par"}
    err = events[-1]["error"]
    assert (err["code"], err["status"], err["retryable"]) == ("502", 502, True)
    assert len(events) == 2


async def test_in_stream_error_with_a_string_code_keeps_it_in_details() -> None:
    body = sse_lines([{"error": {"code": "context_length_exceeded", "message": "too long"}}])
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    err = events[-1]["error"]
    assert err["code"] == "provider_stream_error"
    assert err["details"] == {"providerCode": "context_length_exceeded"}
    assert "too long" in err["message"]
