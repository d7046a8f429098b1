"""Which URLs and addresses a web fetch may reach (server-side request forgery guard).

Every check works on addresses, never on host names: a name is resolved
once, every address it resolves to is checked, and the connection then goes
to a checked address (``prism.web.fetch`` pins it), so a name that answers
with a public address first and a private one later cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

import anyio
import httpx

from prism.tools.context import ToolResultError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses the host resolves to, as strings.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

ALLOWED_SCHEMES = frozenset({"http", "https"})


class WebFetchError(ToolResultError):
    """A fetch refused or failed; ``reason`` is a short machine-readable code
    (``scheme``, ``credentials``, ``blocked_address``, ``resolve_failed``,
    ``redirect_limit``, ``bad_redirect``, ``timeout``, ``connect_failed``,
    ``unsupported_content``). Raised inside a tool, dispatch turns it into a
    ``tool_error`` result carrying the message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (``getaddrinfo``), every address it returns."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise WebFetchError("resolve_failed", f"cannot resolve host {host!r}: {error}") from None
    return [str(info[4][0]) for info in infos]


def check_url(url: str | httpx.URL) -> httpx.URL:
    """The parsed URL when its form is acceptable (http/https, a host, no
    user name or password); a ``WebFetchError`` naming the problem otherwise."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as error:
        raise WebFetchError("invalid_url", f"invalid URL {str(url)!r}: {error}") from None
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise WebFetchError(
            "scheme",
            f"refused URL scheme {parsed.scheme!r}: only http and https may be fetched",
        )
    if parsed.userinfo:
        # Never echo the credentials themselves.
        raise WebFetchError(
            "credentials", "refused URL with credentials (user:password@host) in it"
        )
    if not parsed.raw_host:
        raise WebFetchError("invalid_url", f"URL {str(url)!r} has no host")
    return parsed


def address_problem(address: str, *, allow_loopback: bool = False) -> str | None:
    """Why ``address`` may not be fetched from, or ``None`` when it is a
    public (globally routable) address. IPv4-mapped IPv6 addresses are judged
    by the IPv4 address they carry."""
    try:
        ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return address_problem(str(embedded), allow_loopback=allow_loopback)
    if ip.is_loopback:
        return None if allow_loopback else "a loopback address"
    for label, flag in (
        ("an unspecified address", ip.is_unspecified),
        ("a link-local address", ip.is_link_local),
        ("a multicast address", ip.is_multicast),
        # Before "private": Python counts reserved ranges as private too.
        ("a reserved address", ip.is_reserved),
        ("a private address", ip.is_private),
    ):
        if flag:
            return label
    if not ip.is_global:
        return "an address that is not globally routable"
    return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to an IPv4 host (mapped, 6to4,
    NAT64): such an address reaches that IPv4 host, so it is judged by it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


async def resolve_checked(
    host: str, port: int, resolver: Resolver, *, allow_loopback: bool
) -> tuple[str, ...]:
    """Resolve ``host`` once and check every address; all must pass (one bad
    answer refuses the host, so a resolver cannot mix in an internal one)."""
    literal = host[1:-1] if host.startswith("[") else host
    try:
        ipaddress.ip_address(literal.split("%", 1)[0])
    except ValueError:
        addresses = tuple(await resolver(host, port))
    else:
        addresses = (literal,)
    if not addresses:
        raise WebFetchError("resolve_failed", f"host {host!r} resolved to no address")
    for address in addresses:
        problem = address_problem(address, allow_loopback=allow_loopback)
        if problem is not None:
            shown = host if literal == address else f"{host!r} ({address})"
            raise WebFetchError(
                "blocked_address", f"refused to fetch from {shown}: it is {problem}"
            )
    return addresses
