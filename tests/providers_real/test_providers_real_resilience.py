"""Issue 18: Retry-After honoured by default (and the reason when a retry is
refused), truncation detected whatever the policy, billed usage kept on the
error, seedable jitter, a provider reusable across event loops."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from providers_real_support import (
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    sse_lines,
    sse_response,
)

from prism.errors import ProviderError
from prism.providers.openai_compatible import (
    RequestPolicy,
    create_openai_compatible_provider,
    default_timeout,
)
from prism.retry import (
    DEFAULT_MAX_DELAY_MS,
    RetryContext,
    RetryOptions,
    create_default_retry_policy,
)
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR

MODEL = {"provider": "openai-compatible", "model": "demo-model"}
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _ok() -> httpx.Response:
    return sse_response(sse_lines([chunk(content="fine", finish="stop")]))


def _agent(*responses: Any, slept: list[float]) -> Any:
    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    provider = make_provider(Recorder(*responses))
    return create_agent(model=MODEL, provider=provider, retry=RetryOptions(), sleep=fake_sleep)


@pytest.mark.anyio
@pytest.mark.parametrize(("header", "waited"), [("0.6", 0.6), ("2", 2.0), ("45", 45.0)])
async def test_default_policy_honours_retry_after_up_to_the_ceiling(
    header: str, waited: float
) -> None:
    slept: list[float] = []
    busy = httpx.Response(
        429, json={"error": {"message": "slow down"}}, headers={"retry-after": header}
    )
    session = _agent(busy, _ok(), slept=slept).create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    result = await session.run("hi")
    assert result.text == "fine"
    assert slept == [waited]
    scheduled = [e for e in events if e["type"] == "retry_scheduled"]
    assert [e["delayMs"] for e in scheduled] == [int(waited * 1000)]


@pytest.mark.anyio
async def test_a_refused_retry_says_why() -> None:
    slept: list[float] = []
    busy = httpx.Response(429, json={"error": {"message": "later"}}, headers={"retry-after": "120"})
    session = _agent(busy, slept=slept).create_session()
    with pytest.raises(ProviderError) as caught:
        await session.run("hi")
    assert slept == []
    info = caught.value.info
    assert "not retried: the server asked to wait 120000 ms" in info["message"]
    assert info["details"]["retry"] == {"attempts": 1, "refused": "retry_after_exceeds_max_delay"}


@pytest.mark.anyio
async def test_max_attempts_refusal_names_the_attempts() -> None:
    slept: list[float] = []
    busy = [httpx.Response(503, json={"error": {"message": "busy"}}) for _ in range(3)]
    session = _agent(*busy, slept=slept).create_session()
    with pytest.raises(ProviderError) as caught:
        await session.run("hi")
    assert len(slept) == 2
    assert "not retried: gave up after 3 attempt(s)" in caught.value.info["message"]


def test_default_ceiling_and_seeded_jitter() -> None:
    assert RetryOptions().max_delay_ms == DEFAULT_MAX_DELAY_MS == 60_000
    transient = {"message": "busy", "code": "503"}

    def delays(seed: int) -> list[int]:
        policy = create_default_retry_policy(max_attempts=8, jitter=True, seed=seed)
        return [
            policy.decide(RetryContext(attempt=a, error=transient)).delay_ms  # type: ignore[arg-type]
            for a in range(1, 8)
        ]

    first = delays(7)
    assert first == delays(7)  # seedable
    assert first != delays(8)
    assert all(75 * 2 ** (a - 1) <= d <= 100 * 2 ** (a - 1) for a, d in enumerate(first, start=1))
    # Jitter never shortens a Retry-After.
    policy = create_default_retry_policy(jitter=True, seed=1)
    decision = policy.decide(RetryContext(attempt=1, error={**transient, "retryAfterMs": 1500}))  # type: ignore[arg-type]
    assert decision.delay_ms == 1500
    assert RetryOptions.from_json({"jitter": True, "seed": 3}).resolve_policy().jitter is True  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize("require_done", [True, False])
async def test_neither_done_nor_finish_reason_is_incomplete_whatever_the_policy(
    require_done: bool,
) -> None:
    body = sse_lines([chunk(content="half an ans")], done=False)
    provider = make_provider(
        Recorder(sse_response(body)), request_policy=RequestPolicy(require_done=require_done)
    )
    events = await collect(provider, simple_request())
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "stream_incomplete"


@pytest.mark.anyio
async def test_billed_usage_rides_on_the_error_when_done_is_missing() -> None:
    body = sse_lines(
        [chunk(content="all of it", finish="stop"), chunk(no_choices=True, usage=USAGE)],
        done=False,
    )
    events = await collect(make_provider(Recorder(sse_response(body))), simple_request())
    error = events[-1]["error"]
    assert error["code"] == "stream_incomplete"
    assert error["details"]["usage"] == {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}
    # The policy may waive [DONE] once the model said it finished: then it is complete.
    lenient = make_provider(
        Recorder(sse_response(body)), request_policy=RequestPolicy(require_done=False)
    )
    events = await collect(lenient, simple_request())
    assert events[-1]["type"] == "done" and events[-1]["usage"]["totalTokens"] == 18


def test_read_timeout_default_is_documented_value() -> None:
    assert default_timeout().read == 60.0


# --- one provider, two event loops --------------------------------------------------


class _SSEHandler(http.server.BaseHTTPRequestHandler):
    # Keep-alive: the client pools the connection, which is what ties it to
    # the first event loop.
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        body = sse_lines([chunk(content="pong", finish="stop")])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SSEHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_provider_is_reusable_across_event_loops(server_url: str) -> None:
    provider = create_openai_compatible_provider(base_url=server_url, redactor=NOOP_REDACTOR)

    async def once() -> list[str]:
        events = [e async for e in provider.generate(simple_request())]  # type: ignore[arg-type]
        return [e["type"] for e in events]

    first = anyio.run(once)
    client = provider._client
    second = anyio.run(once)
    assert first == second == ["content_delta", "done"]
    # The pooled client of the first (now closed) loop is not reused: httpx
    # clients are bound to their loop ("Event loop is closed" otherwise).
    assert provider._client is not None and provider._client is not client
    anyio.run(provider.aclose)
    assert json.dumps(first)
