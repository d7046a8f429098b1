"""A real HTTP server on 127.0.0.1 for the fetch guard's tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class LoopbackServer:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.port = server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.release = threading.Event()  # /stall waits on it
        self.big_chunks_sent = 0
        self.hosts: list[str] = []


def _handler(state: dict[str, LoopbackServer]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str = "text/html") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            srv = state["server"]
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            srv.hosts.append(self.headers.get("Host", ""))
            if parts.path == "/page":
                self._send(200, b"<html><body><p>Hello from loopback</p></body></html>")
            elif parts.path == "/redirect":
                self.send_response(int(query.get("status", ["302"])[0]))
                self.send_header("Location", query["to"][0])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif parts.path == "/loop":
                self.send_response(302)
                self.send_header("Location", "/loop")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif parts.path == "/big":
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                try:
                    for _ in range(10_000):
                        self.wfile.write(b"x" * 1024)
                        srv.big_chunks_sent += 1
                except OSError:
                    pass  # the client stopped reading, as it should
            elif parts.path == "/binary":
                self._send(200, b"\x89PNG....", "image/png")
            elif parts.path == "/stall":
                srv.release.wait(30)
                self._send(200, b"late")
            else:
                self._send(404, b"not found", "text/plain")

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that stops reading early (the size cap) is expected


@contextmanager
def loopback_server() -> Iterator[LoopbackServer]:
    state: dict[str, LoopbackServer] = {}
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state["server"] = handle = LoopbackServer(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handle
    finally:
        handle.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
