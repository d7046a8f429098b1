"""Properties: any byte split of a stream gives the same events; credentials are
resolved per request (rotation, OAuth refresh) and every token seen is redacted."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from providers_real_support import (
    ByteStream,
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    sse_lines,
    sse_response,
)

from prism.security import OAuthToken, callable_credential, create_oauth_credential

BODY = sse_lines(
    [
        chunk(reasoning="ponder ✓"),
        chunk(content="Grüße, "),
        chunk(content="世界"),
        chunk(
            tool_calls=[{"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"k":'}}]
        ),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": ' "ü"}'}}], finish="tool_calls"),
        chunk(no_choices=True, usage={"prompt_tokens": 3, "completion_tokens": 4}),
    ]
).replace(b"\n\ndata:", b"\n\n: keep-alive\n\ndata:")


def _events_for(pieces: list[bytes]) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        provider = make_provider(Recorder(lambda: sse_response(ByteStream(pieces))))
        return await collect(provider, simple_request())

    return anyio.run(run)


EXPECTED = _events_for([BODY])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=25))
def test_any_split_of_the_byte_stream_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    assert _events_for([p for p in pieces if p]) == EXPECTED


def test_expected_stream_shape() -> None:
    assert [e["type"] for e in EXPECTED] == [
        "thinking_delta",
        "content_delta",
        "content_delta",
        "tool_call_delta",
        "tool_call_delta",
        "tool_call",
        "usage",
        "done",
    ]
    assert EXPECTED[5]["toolCall"]["arguments"] == {"k": "ü"}


def test_credentials_are_resolved_on_every_request() -> None:
    keys = iter(["sk-rotated-key-one", "sk-rotated-key-two"])
    recorder = Recorder(lambda: sse_response(sse_lines([chunk(content="x")])))

    async def run() -> None:
        provider = make_provider(
            recorder, api_key=None, credential=callable_credential(lambda: next(keys))
        )
        await collect(provider, simple_request())
        await collect(provider, simple_request())

    anyio.run(run)
    assert [r.headers["authorization"] for r in recorder.requests] == [
        "Bearer sk-rotated-key-one",
        "Bearer sk-rotated-key-two",
    ]


def test_oauth_tokens_refresh_by_clock_and_old_ones_stay_redacted() -> None:
    now = [0.0]
    issued = 0

    def refresh(current: OAuthToken | None) -> OAuthToken:
        nonlocal issued
        issued += 1
        return OAuthToken(f"at-oauth-token-{issued}", now[0] + 100, "rt-oauth-refresh")

    echo_old = httpx.Response(
        401, json={"error": {"message": "token at-oauth-token-1 revoked; rt-oauth-refresh"}}
    )
    recorder = Recorder(lambda: sse_response(sse_lines([chunk(content="x")])))

    async def run() -> list[dict[str, Any]]:
        provider = make_provider(
            recorder,
            api_key=None,
            credential=create_oauth_credential(refresh, clock=lambda: now[0]),
        )
        await collect(provider, simple_request())
        now[0] = 95.0  # inside the default 60 s skew window
        recorder.responses = [echo_old]
        return await collect(provider, simple_request())

    events = anyio.run(run)
    assert [r.headers["authorization"] for r in recorder.requests] == [
        "Bearer at-oauth-token-1",
        "Bearer at-oauth-token-2",
    ]
    text = json.dumps(events)
    assert "at-oauth-token-1" not in text and "rt-oauth-refresh" not in text
    assert (
        events[-1]["error"]["message"]
        == "openai-compatible: HTTP 401: token [REDACTED] revoked; [REDACTED]"
    )
