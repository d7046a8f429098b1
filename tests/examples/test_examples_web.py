from __future__ import annotations

from example_runner import run_example


def test_web_fetch_example() -> None:
    assert run_example("web_fetch.py").stdout.splitlines() == [
        "fetched: 200 <p>Prism fetched this page.</p>",
        "refused (blocked_address): refused to fetch from 127.0.0.1: it is a loopback address",
        "refused (blocked_address): redirect refused: refused to fetch from 169.254.169.254:"
        " it is a link-local address",
        "refused (blocked_address): refused to fetch from 'wiki.corp.example' (10.0.0.5):"
        " it is a private address",
        "refused (scheme): refused URL scheme 'file': only http and https may be fetched",
        "refused (credentials): refused URL with credentials (user:password@host) in it",
        "tool: web_fetch ['url']",
    ]
