"""Network errors name the request (method and URL, never credentials) and
tell a refused connection from a lost one (issue 20)."""

from __future__ import annotations

import socket

import httpx
import pytest
from providers_real_support import CANARY_KEY, collect, make_provider, simple_request

from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.retry import is_transient_error_info
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    # Bind, read the port, close: nothing listens there afterwards.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_refused_connection_is_econnrefused_with_method_and_url() -> None:
    port = _closed_port()
    provider = create_openai_compatible_provider(
        base_url=f"http://user:{CANARY_KEY}@127.0.0.1:{port}/v1",
        api_key=CANARY_KEY,
        redactor=NOOP_REDACTOR,
    )
    try:
        events = await collect(provider, simple_request())
    finally:
        await provider.aclose()
    assert [e["type"] for e in events] == ["error"]
    error = events[0]["error"]
    assert error["code"] == "ECONNREFUSED"
    assert is_transient_error_info(error)
    assert (
        f"connection refused: POST http://127.0.0.1:{port}/v1/chat/completions"
        in (error["message"])
    )
    assert CANARY_KEY not in repr(error) and "user" not in error["message"]


async def test_lost_connection_names_the_request_without_query() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset by peer", request=request)

    provider = make_provider(handler)
    provider.url = "https://llm.example.invalid/v1/chat/completions?key=" + CANARY_KEY
    events = await collect(provider, simple_request())
    error = events[-1]["error"]
    assert error["code"] == "ECONNRESET"
    assert (
        "connection lost: POST https://llm.example.invalid/v1/chat/completions:"
        in (error["message"])
    )
    assert CANARY_KEY not in repr(error) and "?key" not in error["message"]
