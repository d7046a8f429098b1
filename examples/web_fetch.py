"""A guarded web fetch: what it reads, and what it refuses and why.

A local HTTP server on 127.0.0.1 stands in for the web (reached only because
this host opts in with ``allow_loopback=True``); a resolver passed in shows
the private-address check without a network.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio

from prism.web import WebFetchError, WebFetchLimits, fetch_url, web_fetch_tool


class Site(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/to-metadata":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<p>Prism fetched this page.</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def intranet_resolver(host: str, port: int) -> Sequence[str]:
    return ["10.0.0.5"]  # what an internal name would resolve to


async def main(base: str) -> None:
    page = await fetch_url(f"{base}/hello", allow_loopback=True)
    print("fetched:", page.status, page.text)
    attempts = [
        (f"{base}/hello", False),  # loopback without opting in
        (f"{base}/to-metadata", True),  # a redirect to a link-local address
        ("http://wiki.corp.example/", False),  # a name resolving to a private address
        ("file:///etc/passwd", False),
        ("http://user:secret@example.com/", False),
    ]
    limits = WebFetchLimits(max_bytes=100_000, timeout=5, max_redirects=3)
    for url, loopback in attempts:
        try:
            await fetch_url(url, allow_loopback=loopback, resolver=intranet_resolver, limits=limits)
        except WebFetchError as error:
            print(f"refused ({error.reason}):", str(error).replace(base, "BASE"))
    tool = web_fetch_tool()  # what an agent gets: create_agent(tools=[tool])
    print("tool:", tool.name, tool.declaration()["parameters"]["required"])


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        anyio.run(main, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
