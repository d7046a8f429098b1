"""``fetch_url`` and the ``web_fetch`` tool: HTTP(S) GET behind the
server-side request forgery guard of ``prism.web.guard``.

Redirects are followed by hand so each hop's URL and addresses are checked
again; the connection goes to the address that was checked (the transport
pins it), while the Host header and TLS server name stay the URL's host.
"""

from __future__ import annotations

import functools
import math
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpcore
import httpx

from prism._json_fields import write_json_fields
from prism.tools.context import ToolContext
from prism.tools.definition import ToolDefinition
from prism.web.guard import Resolver, WebFetchError, check_url, resolve_checked, system_resolver

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class WebFetchLimits:
    """Caps on one fetch: body bytes read (the stream stops there and the
    result says ``truncated``), total seconds for every hop, and redirects."""

    max_bytes: int = 1_000_000
    timeout: float = 20.0
    max_redirects: int = 5

    def __post_init__(self) -> None:
        if self.max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {self.max_bytes}")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout}")
        if self.max_redirects < 0:
            raise ValueError(f"max_redirects must be 0 or more, got {self.max_redirects}")


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool
    redirects: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The tool's result (camelCase, like every wire shape)."""
        return {
            **write_json_fields(self, "url", "status", "content_type", "text", "truncated"),
            "redirects": list(self.redirects),
        }


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses the guard checked for a host; a host with
    no pin is refused, so nothing reaches the system resolver behind the guard's back."""

    def __init__(self) -> None:
        self.pins: dict[str, tuple[str, ...]] = {}
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self.pins.get(host)
        if not addresses:
            raise httpcore.ConnectError(f"host {host!r} was not checked by the fetch guard")
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the fetch guard does not open unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs more than a small fetch: built once.
    return httpx.create_ssl_context(trust_env=False)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, backend: _PinnedBackend) -> None:
        # trust_env=False: an environment proxy would connect on our behalf, unchecked.
        super().__init__(verify=_ssl_context(), trust_env=False)
        # httpx takes no network backend; its pool is rebuilt with one (same
        # settings as httpx's defaults otherwise).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=10,
            max_keepalive_connections=5,
            network_backend=backend,
        )


async def fetch_url(
    url: str,
    *,
    allow_loopback: bool = False,
    resolver: Resolver | None = None,
    limits: WebFetchLimits | None = None,
    headers: dict[str, str] | None = None,
) -> FetchedPage:
    """GET ``url`` and return its text, refusing (``WebFetchError``) what the
    guard does not allow. ``allow_loopback`` lets 127.0.0.0/8 and ::1 through
    (a host's own local service, or tests); nothing else private ever is."""
    limits = limits or WebFetchLimits()
    resolve = resolver or system_resolver
    backend = _PinnedBackend()
    try:
        with anyio.fail_after(limits.timeout):
            async with httpx.AsyncClient(
                transport=_PinnedTransport(backend),
                follow_redirects=False,
                trust_env=False,
                timeout=limits.timeout,
                headers=headers,
            ) as client:
                return await _follow(client, backend, url, resolve, allow_loopback, limits)
    except TimeoutError:
        raise WebFetchError(
            "timeout", f"fetching {url!r} took longer than {limits.timeout:g} s"
        ) from None


async def _follow(
    client: httpx.AsyncClient,
    backend: _PinnedBackend,
    url: str,
    resolve: Resolver,
    allow_loopback: bool,
    limits: WebFetchLimits,
) -> FetchedPage:
    current = check_url(url)
    redirects: list[str] = []
    while True:
        host = current.raw_host.decode("ascii")
        port = current.port or (443 if current.scheme == "https" else 80)
        try:
            backend.pins[host] = await resolve_checked(
                host, port, resolve, allow_loopback=allow_loopback
            )
        except WebFetchError as error:
            if not redirects:
                raise
            raise WebFetchError(error.reason, f"redirect refused: {error}") from None
        try:
            async with client.stream("GET", current) as response:
                if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                    if len(redirects) >= limits.max_redirects:
                        raise WebFetchError(
                            "redirect_limit",
                            f"more than {limits.max_redirects} redirects starting at {url!r}",
                        )
                    current = _redirect_target(current, response.headers["location"])
                    redirects.append(str(current))
                    continue
                return await _read_page(response, redirects, limits)
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as error:
            raise WebFetchError(
                "connect_failed", f"fetching {str(current)!r} failed: {error}"
            ) from None


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    try:
        target = current.join(location)
    except httpx.InvalidURL as error:
        raise WebFetchError("bad_redirect", f"invalid redirect location: {error}") from None
    try:
        return check_url(target)
    except WebFetchError as error:
        raise WebFetchError(error.reason, f"redirect refused: {error}") from None


async def _read_page(
    response: httpx.Response, redirects: list[str], limits: WebFetchLimits
) -> FetchedPage:
    content_type = response.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media and not media.startswith(TEXT_TYPES):
        raise WebFetchError(
            "unsupported_content",
            f"{str(response.url)!r} is {media!r}, not text; only text, HTML, JSON and XML are read",
        )
    body = bytearray()
    truncated = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limits.max_bytes:
            del body[limits.max_bytes :]
            truncated = True
            break
    encoding = response.charset_encoding or "utf-8"
    try:
        text = bytes(body).decode(encoding, errors="replace")
    except LookupError:
        text = bytes(body).decode("utf-8", errors="replace")
    return FetchedPage(
        url=str(response.url),
        status=response.status_code,
        content_type=content_type,
        text=text,
        truncated=truncated,
        redirects=tuple(redirects),
    )


WEB_FETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "An http:// or https:// URL."},
    },
    "required": ["url"],
    "additionalProperties": False,
}


def web_fetch_tool(
    *,
    name: str = "web_fetch",
    allow_loopback: bool = False,
    resolver: Resolver | None = None,
    limits: WebFetchLimits | None = None,
) -> ToolDefinition:
    """The ``web_fetch`` tool: ``{"url": ...}`` in, the page's text (and its
    final URL, status, content type, ``truncated``) out; a refusal is a tool
    error naming why, which the model sees."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        page = await fetch_url(
            args["url"], allow_loopback=allow_loopback, resolver=resolver, limits=limits
        )
        return page.to_json()

    return ToolDefinition(
        name,
        execute,
        description=(
            "Fetch a public web page over http(s) and return its text. Private, "
            "internal and non-http addresses are refused."
        ),
        parameters=WEB_FETCH_SCHEMA,
        idempotent=True,
    )
