"""Failures: HTTP statuses, Retry-After, timeouts, resets, malformed and cut
streams, cancellation. Every one ends the stream with exactly one ``error``
event carrying a code the retry policy classifies, with secrets redacted."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import UTC, datetime
from email.utils import format_datetime

import anyio
import httpx
import pytest
from providers_real_support import (
    CANARY_KEY,
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

from prism.retry import is_transient_error_info

pytestmark = pytest.mark.anyio

NOW = 1_760_000_000.0


def _json_error(
    status: int, message: str, code: str | None = None, **headers: str
) -> httpx.Response:
    err: dict[str, object] = {"message": message, "type": "error"}
    if code:
        err["code"] = code
    return httpx.Response(status, json={"error": err}, headers=headers)


async def _only_error(response: httpx.Response | Exception, **kwargs: object) -> dict[str, object]:
    recorder = Recorder(response)
    events = await collect(make_provider(recorder, **kwargs), simple_request())
    assert len(events) == 1 and events[0]["type"] == "error", events
    error = events[0]["error"]
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize(
    ("status", "transient"), [(429, True), (500, True), (502, True), (503, True), (504, True)]
)
async def test_transient_statuses_are_classified(status: int, transient: bool) -> None:
    error = await _only_error(_json_error(status, "busy"))
    assert error["code"] == str(status)
    assert error["status"] == status
    assert error["retryable"] is transient
    assert "retryAfterMs" not in error
    assert is_transient_error_info(error) is transient


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retryable(status: int) -> None:
    error = await _only_error(_json_error(status, "nope", code="invalid_request_error"))
    assert error["code"] == str(status)
    assert error["retryable"] is False
    assert error["details"] == {"providerCode": "invalid_request_error"}
    assert is_transient_error_info(error) is False


async def test_429_retry_after_seconds() -> None:
    error = await _only_error(_json_error(429, "Rate limit reached", **{"retry-after": "2"}))
    assert error["retryAfterMs"] == 2000
    assert "HTTP 429: Rate limit reached" in str(error["message"])


async def test_503_retry_after_http_date_uses_the_injected_clock() -> None:
    when = format_datetime(datetime.fromtimestamp(NOW + 7, tz=UTC), usegmt=True)
    error = await _only_error(
        _json_error(503, "overloaded", **{"retry-after": when}), clock=lambda: NOW
    )
    assert error["retryAfterMs"] == 7000


async def test_retry_after_ms_header_wins_and_past_dates_clamp_to_zero() -> None:
    error = await _only_error(
        _json_error(429, "slow", **{"retry-after-ms": "1500", "retry-after": "9"})
    )
    assert error["retryAfterMs"] == 1500
    past = format_datetime(datetime.fromtimestamp(NOW - 60, tz=UTC), usegmt=True)
    error = await _only_error(_json_error(429, "slow", **{"retry-after": past}), clock=lambda: NOW)
    assert error["retryAfterMs"] == 0


async def test_unreadable_retry_after_is_ignored() -> None:
    error = await _only_error(_json_error(429, "slow", **{"retry-after": "soon-ish"}))
    assert "retryAfterMs" not in error


async def test_error_bodies_are_redacted_and_clipped() -> None:
    body = f"upstream said: bad key {CANARY_KEY} " + "x" * 5000
    error = await _only_error(httpx.Response(500, text=body))
    assert CANARY_KEY not in json.dumps(error)
    assert "[REDACTED]" in str(error["message"])
    assert len(str(error["message"])) < 1200


async def test_json_error_message_with_the_key_is_redacted() -> None:
    error = await _only_error(_json_error(401, f"Incorrect API key provided: {CANARY_KEY}"))
    assert CANARY_KEY not in json.dumps(error)
    assert "Incorrect API key provided: [REDACTED]" in str(error["message"])


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("timed out"),
        httpx.ConnectTimeout("connect timed out"),
        httpx.PoolTimeout("pool"),
    ],
)
async def test_timeouts_are_etimedout(exc: Exception) -> None:
    error = await _only_error(exc)
    assert error["code"] == "ETIMEDOUT"
    assert is_transient_error_info(error)


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("connection refused"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadError("connection reset by peer"),
    ],
)
async def test_connection_failures_are_econnreset(exc: Exception) -> None:
    error = await _only_error(exc)
    assert error["code"] == "ECONNRESET"
    assert error["details"] == {"kind": type(exc).__name__}
    assert is_transient_error_info(error)


async def test_transport_messages_are_redacted() -> None:
    error = await _only_error(httpx.ConnectError(f"proxy rejected {CANARY_KEY}"))
    assert CANARY_KEY not in json.dumps(error)


async def test_mid_stream_disconnect_after_output() -> None:
    body = sse_lines([chunk(content="Hello"), chunk(content=" there")], done=False)
    stream = ByteStream(
        split_every(body, 9),
        fail_with=httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body"
        ),
    )
    events = await collect(make_provider(Recorder(sse_response(stream))), simple_request())
    assert [e["type"] for e in events] == ["content_delta", "content_delta", "error"]
    assert events[-1]["error"]["code"] == "ECONNRESET"
    assert stream.closed


async def test_read_timeout_mid_stream() -> None:
    body = sse_lines([chunk(content="Hel")], done=False)
    stream = ByteStream([body], fail_with=httpx.ReadTimeout("read timed out"))
    events = await collect(make_provider(Recorder(sse_response(stream))), simple_request())
    assert [e["type"] for e in events] == ["content_delta", "error"]
    assert events[-1]["error"]["code"] == "ETIMEDOUT"


async def test_malformed_json_chunk_stops_the_stream() -> None:
    body = (
        sse_lines([chunk(content="ok")], done=False)
        + b'data: {"choices": [{"delta": {"content": "x"}\n\n'
        + sse_lines([chunk(content="never seen")])
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert [e["type"] for e in events] == ["content_delta", "error"]
    error = events[-1]["error"]
    assert error["code"] == "malformed_chunk"
    assert "invalid JSON at char" in error["message"]
    assert "never seen" not in json.dumps(events)


@pytest.mark.parametrize("payload", ['"just a string"', "[1, 2]", '{"choices": 5}'])
async def test_wrong_shaped_chunks_are_malformed(payload: str) -> None:
    body = f"data: {payload}\n\n".encode() + sse_lines([])
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert events[-1]["error"]["code"] == "malformed_chunk"


async def test_stream_without_done_is_incomplete_and_emits_no_tool_calls() -> None:
    body = sse_lines(
        [chunk(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}])],
        done=False,
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    assert [e["type"] for e in events] == ["tool_call_delta", "error"]
    assert events[-1]["error"]["code"] == "stream_incomplete"
    assert is_transient_error_info(events[-1]["error"])


async def test_require_done_can_be_relaxed_by_policy() -> None:
    from prism.providers.openai_compatible import RequestPolicy

    body = sse_lines([chunk(content="a", finish="stop")], done=False)
    provider = make_provider(
        Recorder(sse_response(body)), request_policy=RequestPolicy(require_done=False)
    )
    events = await collect(provider, simple_request())
    assert events[-1] == {"type": "done", "stopReason": "stop"}


async def test_non_event_stream_response_is_refused() -> None:
    error = await _only_error(httpx.Response(200, json={"choices": []}))
    assert error["code"] == "invalid_response"
    assert "application/json" in str(error["message"])


async def test_consumer_stopping_early_closes_the_http_stream() -> None:
    body = sse_lines([chunk(content="a"), chunk(content="b")])
    stream = ByteStream(split_every(body, 5))
    provider = make_provider(Recorder(sse_response(stream)))
    async with aclosing(provider.generate(simple_request())) as events:
        async for _event in events:
            break
    assert stream.closed


async def test_cancellation_closes_the_http_stream() -> None:
    body = sse_lines([chunk(content="first")], done=False)
    stream = ByteStream([body], hang=anyio.sleep_forever)
    provider = make_provider(Recorder(sse_response(stream)))
    seen: list[dict[str, object]] = []
    with anyio.CancelScope() as scope:
        async with aclosing(provider.generate(simple_request())) as events:
            async for event in events:
                seen.append(event)
                scope.cancel()  # the next read of the hanging server is cancelled
    assert scope.cancelled_caught
    assert seen == [{"type": "content_delta", "text": "first"}]
    assert stream.closed


async def test_cancellation_from_another_task_while_waiting_for_chunks() -> None:
    body = sse_lines([chunk(content="first")], done=False)
    stream = ByteStream([body], hang=anyio.sleep_forever)
    provider = make_provider(Recorder(sse_response(stream)))
    got_first = anyio.Event()
    seen: list[dict[str, object]] = []

    async def consume() -> None:
        async with aclosing(provider.generate(simple_request())) as events:
            async for event in events:
                seen.append(event)
                got_first.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await got_first.wait()
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert [e["type"] for e in seen] == ["content_delta"]  # no error event after cancel
    assert stream.closed
