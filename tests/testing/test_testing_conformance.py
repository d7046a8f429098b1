from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from prism.contracts import ProviderEvent, ProviderRequest
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call_delta,
    provider_usage,
)
from prism.testing import (
    assert_abort_is_observed,
    assert_no_secret_leak,
    assert_provider_stream_conforms,
    assert_serialized_request_covers_content,
    assert_tool_call_deltas_reconstruct,
    assert_usage_accounting,
    collect_provider_events,
)

REQUEST: ProviderRequest = {
    "model": {"provider": "demo", "model": "demo-model"},
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
}


class RawProvider:
    """A provider whose events are not validated, to feed the checks bad streams."""

    name = "raw"

    def __init__(self, events: list[Any], checkpoint: bool = True) -> None:
        self.events = events
        self.checkpoint = checkpoint

    async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        for event in self.events:
            if self.checkpoint:
                await anyio.lowlevel.checkpoint()
            yield event


@pytest.mark.anyio
async def test_conforming_mock_stream() -> None:
    provider = create_mock_provider(
        [
            provider_text_delta("Hel"),
            provider_text_delta("lo"),
            provider_usage(input_tokens=10, cache_read_tokens=4),
            provider_done("stop", {"cacheWriteTokens": 2}),
        ]
    )
    events = await assert_provider_stream_conforms(
        provider,
        REQUEST,
        expect_text="Hello",
        expect_usage={"inputTokens": 10, "cacheReadTokens": 4, "cacheWriteTokens": 2},
        expect_stop_reason="stop",
    )
    assert [e["type"] for e in events] == ["content_delta", "content_delta", "usage", "done"]
    assert await collect_provider_events(provider, REQUEST) == events


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("events", "kwargs", "message"),
    [
        ([], {}, "produced no events"),
        ([provider_text_delta("x")], {}, "ended without a terminal event"),
        (
            [provider_done(), provider_text_delta("x")],
            {},
            "terminal event at index 0 is not the last",
        ),
        (
            [provider_text_delta("x"), provider_done(), provider_done()],
            {},
            "terminal event at index 1",
        ),
        ([{"type": "mystery"}], {}, "event 0 is malformed: provider event has unknown type"),
        (
            [provider_error("no", "bad_request")],
            {},
            "ended with an error event (code 'bad_request')",
        ),
        (
            [provider_text_delta("Hi"), provider_done()],
            {"expect_text": "Hello"},
            "streamed text differs",
        ),
        ([provider_done("length")], {"expect_stop_reason": "stop"}, "stop reason 'length'"),
        ([provider_done()], {"expect_usage": {"inputTokens": 1}}, "reported no usage"),
    ],
)
async def test_non_conforming_streams(events: list[Any], kwargs: Any, message: str) -> None:
    with pytest.raises(AssertionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await assert_provider_stream_conforms(RawProvider(events), REQUEST, **kwargs)


@pytest.mark.anyio
async def test_error_terminal_allowed_when_asked() -> None:
    events = await assert_provider_stream_conforms(
        create_mock_provider([provider_error("slow", "429")]), REQUEST, allow_error=True
    )
    assert events[-1]["type"] == "error"


@pytest.mark.anyio
async def test_text_mismatch_message_does_not_echo_content() -> None:
    with pytest.raises(AssertionError) as caught:
        await assert_provider_stream_conforms(
            RawProvider([provider_text_delta("private words"), provider_done()]),
            REQUEST,
            expect_text="other",
        )
    assert "private" not in str(caught.value)


@pytest.mark.anyio
async def test_abort_observed_by_mock_before_and_mid_stream() -> None:
    provider = create_mock_provider(
        [provider_text_delta(str(i)) for i in range(5)] + [provider_done()]
    )
    assert await assert_abort_is_observed(provider, REQUEST) == []
    received = await assert_abort_is_observed(provider, REQUEST, after_events=2)
    assert [e["text"] for e in received] == ["0", "1"]  # type: ignore[typeddict-item]
    slow = create_mock_provider([provider_text_delta("x"), provider_done()], delay_ms=60_000)
    assert await assert_abort_is_observed(slow, REQUEST) == []


@pytest.mark.anyio
async def test_abort_ignored_by_a_provider_without_checkpoints() -> None:
    deaf = RawProvider([provider_text_delta("a"), provider_done()], checkpoint=False)
    with pytest.raises(AssertionError, match="produced 1 event\\(s\\) after cancellation"):
        await assert_abort_is_observed(deaf, REQUEST, after_events=1)
    with pytest.raises(AssertionError, match=r"after cancellation|without observing cancellation"):
        await assert_abort_is_observed(deaf, REQUEST)


@pytest.mark.anyio
async def test_abort_point_past_the_end_of_the_stream() -> None:
    provider = create_mock_provider([provider_text_delta("a"), provider_done()])
    with pytest.raises(AssertionError, match=r"ended after 2 event\(s\), before the cancel point"):
        await assert_abort_is_observed(provider, REQUEST, after_events=5)


@pytest.mark.anyio
async def test_abort_swallowed_is_detected() -> None:
    class Swallower:
        name = "swallow"

        async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
            try:
                await anyio.sleep(3600)
            except BaseException:
                pass
            if False:
                yield provider_done()

    with pytest.raises(AssertionError, match="without observing cancellation"):
        await assert_abort_is_observed(Swallower(), REQUEST)


def test_tool_call_deltas_reconstruct() -> None:
    events: list[ProviderEvent] = [
        provider_tool_call_delta(0, id="call_1", name="lookup", arguments_delta='{"q":'),
        provider_tool_call_delta(1, id="call_2", name="read"),
        provider_tool_call_delta(0, arguments_delta='"prism"}'),
        provider_text_delta("ignored"),
        provider_done(),
    ]
    calls = assert_tool_call_deltas_reconstruct(
        events,
        [
            {"id": "call_1", "name": "lookup", "arguments": {"q": "prism"}},
            {"id": "call_2", "name": "read", "arguments": {}},
        ],
    )
    assert calls[0]["arguments"] == {"q": "prism"}


@pytest.mark.parametrize(
    ("events", "expected", "message"),
    [
        ([provider_tool_call_delta(0, name="x")], [{}], "index 0 has no id or no name"),
        (
            [provider_tool_call_delta(0, id="a", name="x", arguments_delta='{"q":sk-1')],
            [{}],
            "not valid JSON",
        ),
        (
            [provider_tool_call_delta(0, id="a", name="x", arguments_delta="[1]")],
            [{}],
            "non-object",
        ),
        ([provider_tool_call_delta(0, id="a", name="x")], [], "reconstructed 1 tool call"),
        ([provider_tool_call_delta(0, id="a", name="x")], [{"name": "y"}], "tool call 0: name"),
    ],
)
def test_tool_call_delta_failures(events: Any, expected: Any, message: str) -> None:
    with pytest.raises(AssertionError, match=message) as caught:
        assert_tool_call_deltas_reconstruct(events, expected)
    assert "sk-1" not in str(caught.value)


def test_usage_accounting_merges_usage_and_done() -> None:
    events: list[ProviderEvent] = [
        provider_usage(input_tokens=10),
        provider_done(usage={"outputTokens": 3, "cacheReadTokens": 4}),
    ]
    merged = assert_usage_accounting(events, {"inputTokens": 10, "cacheReadTokens": 4})
    assert merged == {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 4}
    with pytest.raises(AssertionError, match="usage field cacheWriteTokens: expected 2, got None"):
        assert_usage_accounting(events, {"cacheWriteTokens": 2})


CONTENT_REQUEST: ProviderRequest = {
    "model": {"provider": "demo", "model": "demo-model"},
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hello\nthere"},
                {"type": "image", "url": "https://example.invalid/img.png"},
                {
                    "type": "tool_result",
                    "toolCallId": "call_1",
                    "name": "lookup",
                    "result": {"id": 42},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "call_2", "name": "read", "arguments": {"path": "a.md"}}
            ],
        },
    ],
}


def serialize(drop_image: bool = False, drop_result: bool = False) -> dict[str, Any]:
    """A toy wire format: tool arguments as a JSON string, like many real APIs."""
    content: list[Any] = [{"type": "text", "text": "Hello\nthere"}]
    if not drop_image:
        content.append(
            {"type": "image_url", "image_url": {"url": "https://example.invalid/img.png"}}
        )
    messages: list[Any] = [{"role": "user", "content": content}]
    if not drop_result:
        messages.append(
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"id": 42})}
        )
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_2",
                    "function": {"name": "read", "arguments": json.dumps({"path": "a.md"})},
                }
            ],
        }
    )
    return {"model": "demo-model", "messages": messages}


def test_serialized_request_covers_content() -> None:
    assert_serialized_request_covers_content(CONTENT_REQUEST, serialize())
    assert_serialized_request_covers_content(CONTENT_REQUEST, json.dumps(serialize()))
    assert_serialized_request_covers_content(
        CONTENT_REQUEST, serialize(drop_image=True), unsupported=["image"]
    )


def test_serialized_request_dropping_blocks_fails() -> None:
    with pytest.raises(
        AssertionError, match=r"dropped content of a image block \(message 0, block 1\)"
    ):
        assert_serialized_request_covers_content(CONTENT_REQUEST, serialize(drop_image=True))
    with pytest.raises(AssertionError, match="tool_result block"):
        assert_serialized_request_covers_content(CONTENT_REQUEST, serialize(drop_result=True))
    with pytest.raises(AssertionError, match="not valid JSON"):
        assert_serialized_request_covers_content(CONTENT_REQUEST, "{oops")


def test_no_secret_leak() -> None:
    secret = "sk-conformance-0123456789"
    clean: list[Any] = [provider_text_delta("fine"), provider_done()]
    assert_no_secret_leak(clean, [secret, ""])
    leaky: list[Any] = [*clean, provider_error(f"bad key {secret}")]
    with pytest.raises(
        AssertionError, match=r"secret #1 \(25 chars\) leaked in event 2 \(type 'error'\)"
    ) as caught:
        assert_no_secret_leak(leaky, [secret])
    assert secret not in str(caught.value)


@pytest.mark.anyio
async def test_mock_provider_redaction_round_trip() -> None:
    secret = "sk-mock-0123456789"
    provider = create_mock_provider(lambda request: [provider_text_delta("ok"), provider_done()])
    request: Any = copy_request_with_secret(secret)
    events = await collect_provider_events(provider, request)
    assert_no_secret_leak(events, [secret])
    with pytest.raises(AssertionError):
        assert_no_secret_leak(provider.requests, [secret])


def copy_request_with_secret(secret: str) -> dict[str, Any]:
    return {**REQUEST, "options": {"apiKey": secret}}
