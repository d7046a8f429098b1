"""The web fetch guard against a real loopback HTTP server; the resolver is
injected so private-address and rebinding cases need no network."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from tests.web.loopback_server import LoopbackServer, loopback_server

from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.web import WebFetchError, WebFetchLimits, address_problem, fetch_url, web_fetch_tool

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with loopback_server() as handle:
        yield handle


def fixed_resolver(*answers: str, calls: list[str] | None = None):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> Sequence[str]:
        if calls is not None:
            calls.append(host)
        return list(answers)

    return resolve


async def refused(url: str, reason: str, **kwargs: object) -> str:
    with pytest.raises(WebFetchError) as caught:
        await fetch_url(url, **kwargs)  # type: ignore[arg-type]
    assert caught.value.reason == reason, str(caught.value)
    return str(caught.value)


async def test_fetches_a_page_from_loopback_when_the_host_opts_in(server: LoopbackServer) -> None:
    page = await fetch_url(f"{server.base}/page", allow_loopback=True)
    assert page.status == 200
    assert "Hello from loopback" in page.text
    assert page.content_type.startswith("text/html")
    assert page.truncated is False


async def test_loopback_is_refused_by_default(server: LoopbackServer) -> None:
    message = await refused(f"{server.base}/page", "blocked_address")
    assert "loopback" in message
    assert "loopback" in await refused("http://[::1]/", "blocked_address")


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("10.0.0.7", "private"),
        ("192.168.1.1", "private"),
        ("172.16.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not globally routable"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("2002:a00:1::", "private"),  # 6to4 carrying 10.0.0.1
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 carrying 169.254.169.254
        ("64:ff9b::7f00:1", "loopback"),
    ],
)
def test_address_classes_are_refused(address: str, kind: str) -> None:
    problem = address_problem(address)
    assert problem is not None and kind in problem


def test_public_addresses_pass_and_loopback_only_on_opt_in() -> None:
    assert address_problem("93.184.216.34") is None
    assert address_problem("2606:4700::1111") is None
    assert address_problem("64:ff9b::808:808") is None  # NAT64 to a public IPv4 host
    assert address_problem("127.0.0.1", allow_loopback=True) is None
    assert address_problem("::ffff:127.0.0.1", allow_loopback=True) is None
    # Opting into loopback lets nothing else private through.
    assert address_problem("10.0.0.1", allow_loopback=True) is not None


async def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    message = await refused(
        "http://internal.example/", "blocked_address", resolver=fixed_resolver("10.1.2.3")
    )
    assert "internal.example" in message and "10.1.2.3" in message and "private" in message


async def test_every_resolved_address_is_checked() -> None:
    # One public answer does not vouch for an internal one beside it.
    resolver = fixed_resolver("93.184.216.34", "169.254.169.254")
    message = await refused("http://mixed.example/", "blocked_address", resolver=resolver)
    assert "169.254.169.254" in message


async def test_private_ip_literals_are_refused_without_resolving() -> None:
    calls: list[str] = []
    resolver = fixed_resolver("93.184.216.34", calls=calls)
    await refused("http://192.168.0.1/admin", "blocked_address", resolver=resolver)
    await refused("http://[::ffff:10.0.0.1]/", "blocked_address", resolver=resolver)
    assert calls == []


async def test_the_connection_goes_to_the_checked_address(server: LoopbackServer) -> None:
    """Rebinding: the name is resolved once, by the guard, and the socket goes
    to that address. 'rebind.invalid' has no real DNS answer, so the fetch
    only succeeds if httpx never resolves it again; Host stays the name."""
    calls: list[str] = []
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])

    async def rebinding(host: str, port: int) -> Sequence[str]:
        calls.append(host)
        return next(answers)

    page = await fetch_url(
        f"http://rebind.invalid:{server.port}/page", allow_loopback=True, resolver=rebinding
    )
    assert "Hello from loopback" in page.text
    assert calls == ["rebind.invalid"]
    assert server.hosts[-1] == f"rebind.invalid:{server.port}"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme"),
        ("ftp://example.com/x", "scheme"),
        ("gopher://example.com/", "scheme"),
        ("http://user:hunter2@example.com/", "credentials"),
        ("http:///nohost", "invalid_url"),
    ],
)
async def test_bad_urls_are_refused(url: str, reason: str) -> None:
    message = await refused(url, reason, resolver=fixed_resolver("93.184.216.34"))
    assert "hunter2" not in message


async def test_redirects_are_followed_and_recorded(server: LoopbackServer) -> None:
    page = await fetch_url(f"{server.base}/redirect?to=/page", allow_loopback=True)
    assert "Hello from loopback" in page.text
    assert page.redirects == (f"{server.base}/page",)
    assert page.url == f"{server.base}/page"


async def test_a_redirect_to_a_private_address_is_refused(server: LoopbackServer) -> None:
    target = "http://169.254.169.254/latest/meta-data/"
    message = await refused(
        f"{server.base}/redirect?to={target}&status=307", "blocked_address", allow_loopback=True
    )
    assert message.startswith("redirect refused")
    assert "169.254.169.254" in message and "link-local" in message


async def test_a_redirect_to_another_scheme_is_refused(server: LoopbackServer) -> None:
    message = await refused(
        f"{server.base}/redirect?to=file:///etc/passwd", "scheme", allow_loopback=True
    )
    assert message.startswith("redirect refused")


async def test_a_redirect_to_a_name_resolving_privately_is_refused(server: LoopbackServer) -> None:
    async def resolver(host: str, port: int) -> Sequence[str]:
        return ["10.9.9.9"] if host == "intranet.example" else ["127.0.0.1"]

    await refused(
        f"{server.base}/redirect?to=http://intranet.example/",
        "blocked_address",
        allow_loopback=True,
        resolver=resolver,
    )


async def test_redirects_are_bounded(server: LoopbackServer) -> None:
    message = await refused(
        f"{server.base}/loop",
        "redirect_limit",
        allow_loopback=True,
        limits=WebFetchLimits(max_redirects=3),
    )
    assert "more than 3 redirects" in message


async def test_the_body_stops_at_the_size_cap(server: LoopbackServer) -> None:
    page = await fetch_url(
        f"{server.base}/big", allow_loopback=True, limits=WebFetchLimits(max_bytes=5000)
    )
    assert page.truncated is True
    assert len(page.text) == 5000
    # The client stopped reading: the server never got its 10 MB out.
    assert server.big_chunks_sent < 10_000


async def test_binary_content_is_refused(server: LoopbackServer) -> None:
    message = await refused(f"{server.base}/binary", "unsupported_content", allow_loopback=True)
    assert "image/png" in message


async def test_a_slow_server_hits_the_time_cap(server: LoopbackServer) -> None:
    server.release.clear()
    try:
        message = await refused(
            f"{server.base}/stall",
            "timeout",
            allow_loopback=True,
            limits=WebFetchLimits(timeout=0.3),
        )
    finally:
        server.release.set()
    assert "longer than 0.3 s" in message


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        WebFetchLimits(max_bytes=0)
    with pytest.raises(ValueError, match="timeout"):
        WebFetchLimits(timeout=float("inf"))
    with pytest.raises(ValueError, match="max_redirects"):
        WebFetchLimits(max_redirects=-1)


async def test_the_tool_reports_refusals_to_the_model(server: LoopbackServer) -> None:
    provider = create_mock_provider(
        [
            [
                provider_tool_call("c1", "web_fetch", {"url": f"{server.base}/page"}),
                provider_tool_call("c2", "web_fetch", {"url": "http://10.0.0.1/"}),
                provider_done("tool_use"),
            ],
            [provider_text_delta("done"), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "t"},
        provider=provider,
        tools=[web_fetch_tool(allow_loopback=True)],
    )
    await agent.create_session("s").run("fetch")
    results = {
        block["toolCallId"]: block
        for message in provider.requests[1]["messages"]
        if message["role"] == "tool"
        for block in message["content"]
    }
    assert "Hello from loopback" in results["c1"]["result"]["text"]
    assert results["c2"].get("isError") is True
    assert "private address" in str(results["c2"]["result"])
