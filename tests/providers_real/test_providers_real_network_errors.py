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


@pytest.mark.parametrize(
    ("exc", "message", "code", "retryable"),
    [
        (
            httpx.ReadTimeout("slow"),
            "p: request timed out: POST http://h/v1: ReadTimeout (slow)",
            "ETIMEDOUT",
            True,
        ),
        (
            httpx.ConnectError("no route"),
            "p: could not connect: POST http://h/v1: ConnectError (no route)",
            "ECONNRESET",
            True,
        ),
        (
            httpx.ReadError("reset"),
            "p: connection lost: POST http://h/v1: ReadError (reset)",
            "ECONNRESET",
            True,
        ),
        (
            httpx.UnsupportedProtocol("ftp"),
            "p: transport error: POST http://h/v1: UnsupportedProtocol (ftp)",
            "transport_error",
            None,
        ),
    ],
)
def test_each_transport_failure_has_its_message_code_and_retry_flag(
    exc: Exception, message: str, code: str, retryable: bool | None
) -> None:
    from prism.providers._openai_compatible_errors import transport_error_info

    info = transport_error_info("p", exc, NOOP_REDACTOR, url="http://h/v1")
    assert info == {
        "message": message,
        "code": code,
        **({"retryable": retryable} if retryable else {}),
        "details": {"kind": type(exc).__name__},
    }
    other = transport_error_info("p", ValueError("odd"), NOOP_REDACTOR, url="http://h/v1")
    assert other == {
        "message": "p: provider failed: ValueError (odd)",
        "code": "provider_exception",
        "details": {"kind": "ValueError"},
    }
