"""A small read-only HTTP/1.1 server: anyio sockets, h11 for the protocol
(already installed with httpx), one request per connection.

Every request is checked before it reaches a handler, in this order: the
``Host`` header must name this server (127.0.0.1, localhost or the bound
address, with its port), an ``Origin``, when sent, must be this server's
own (both against DNS rebinding), the method must be GET or HEAD
(read-only), and the ``token`` query parameter must be the access token.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import h11
from anyio.abc import SocketStream

__all__ = ["Request", "Response", "SseResponse", "serve_http"]

MAX_REQUEST_BYTES = 64 * 1024
# A client that opens a connection and sends nothing must not hold it forever.
REQUEST_TIMEOUT_SECONDS = 10.0
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())

    @classmethod
    def error(cls, status: int, message: str) -> Response:
        return cls.json({"error": message}, status)


@dataclass
class SseResponse:
    """A ``text/event-stream``: each item is ``(event, data)``; ``None`` is a
    keep-alive comment."""

    events: AsyncIterator[tuple[str, Any] | None]
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


Handler = Callable[[Request], Awaitable[Response | SseResponse]]


@dataclass
class Guard:
    token: str
    hosts: frozenset[str]

    def check(self, request: Request) -> Response | None:
        host = request.headers.get("host", "")
        if host.lower() not in self.hosts:
            return Response.error(403, "refused: the Host header does not name this inspector")
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return Response.error(403, "refused: the request comes from another origin")
        if request.method not in ("GET", "HEAD"):
            return Response.error(405, "the inspector is read-only: only GET is served")
        given = request.query.get("token", "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return Response.error(401, "missing or wrong access token")
        return None


def allowed_hosts(bind_host: str, port: int) -> frozenset[str]:
    names = {
        "127.0.0.1",
        "localhost",
        "[::1]",
        bind_host if ":" not in bind_host else f"[{bind_host}]",
    }
    return frozenset(f"{name}:{port}".lower() for name in names)


async def _read_request(stream: SocketStream, conn: h11.Connection) -> Request | None:
    """The request head, or None for a malformed, oversized or silent one."""
    received = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive(8192)
            received += len(data)
            if received > MAX_REQUEST_BYTES:
                return None
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Request):
            target = urlsplit(event.target.decode("latin-1"))
            query = {k: v[0] for k, v in parse_qs(target.query, keep_blank_values=True).items()}
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in event.headers}
            return Request(event.method.decode("latin-1"), target.path, query, headers)
        return None


async def _send(stream: SocketStream, conn: h11.Connection, event: Any) -> None:
    data = conn.send(event)
    if data:
        await stream.send(data)


async def _respond(
    stream: SocketStream, conn: h11.Connection, response: Response, head: bool
) -> None:
    headers = [
        (b"content-type", response.content_type.encode()),
        (b"content-length", str(len(response.body)).encode()),
        (b"connection", b"close"),
        *SECURITY_HEADERS,
    ]
    await _send(stream, conn, h11.Response(status_code=response.status, headers=headers))
    if not head:
        await _send(stream, conn, h11.Data(data=response.body))
    await _send(stream, conn, h11.EndOfMessage())


async def _stream_events(stream: SocketStream, conn: h11.Connection, sse: SseResponse) -> None:
    headers = [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"connection", b"close"),
        *SECURITY_HEADERS,
        *sse.headers,
    ]
    await _send(stream, conn, h11.Response(status_code=200, headers=headers))
    await _send(stream, conn, h11.Data(data=b": connected\n\n"))
    async for item in sse.events:
        if item is None:
            chunk = b": keep-alive\n\n"
        else:
            name, payload = item
            text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            chunk = f"event: {name}\ndata: {text}\n\n".encode()
        await _send(stream, conn, h11.Data(data=chunk))
    await _send(stream, conn, h11.EndOfMessage())


async def _serve_one(stream: SocketStream, guard: Guard, handler: Handler) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
    async with stream:
        try:
            request: Request | None = None
            with anyio.move_on_after(REQUEST_TIMEOUT_SECONDS):
                request = await _read_request(stream, conn)
            if request is None:
                await _respond(stream, conn, Response.error(400, "bad request"), False)
                return
            refused = guard.check(request)
            if refused is not None:
                await _respond(stream, conn, refused, request.method == "HEAD")
                return
            result = await handler(request)
            if isinstance(result, SseResponse):
                await _stream_events(stream, conn, result)
            else:
                await _respond(stream, conn, result, request.method == "HEAD")
        except (h11.RemoteProtocolError, h11.LocalProtocolError):
            return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            return  # the browser went away (a closed tab ends its event stream)


async def serve_http(
    listener: anyio.abc.Listener[SocketStream],
    guard: Guard,
    handler: Handler,
) -> None:
    """Serve until cancelled."""

    async def serve(stream: SocketStream) -> None:
        await _serve_one(stream, guard, handler)

    await listener.serve(serve)


def query_int(query: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        return default
