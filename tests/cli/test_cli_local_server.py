"""``prism --provider openai-compatible --base-url URL``: a local server (LM
Studio, Ollama, vLLM, llama.cpp) needs no key, so none is asked for and no
Authorization header is sent. A real loopback HTTP server, real processes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from conftest import run_prism


class LocalServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self
        reply = (
            "".join(
                f"data: {json.dumps(chunk)}\n\n"
                for chunk in (
                    {"choices": [{"index": 0, "delta": {"content": "hello from local"}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                )
            )
            + "data: [DONE]\n\n"
        )

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                data = reply.encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    server = LocalServer()
    yield server
    server.close()


def test_a_keyless_local_server_gets_no_authorization_header(
    cli_env: dict[str, str], local_server: LocalServer
) -> None:
    done = run_prism(
        cli_env,
        "--provider",
        "openai-compatible",
        "--base-url",
        local_server.url,
        "--model",
        "llama3.2",
        "-p",
        "hi",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "hello from local" and done.stderr == b""
    sent = local_server.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert "authorization" not in {k.lower() for k in sent["headers"]}
    assert sent["body"]["model"] == "llama3.2"


def test_a_placeholder_key_warns_in_one_line_of_prisms_own(
    cli_env: dict[str, str], local_server: LocalServer
) -> None:
    env = {**cli_env, "LOCAL_KEY": "x"}
    done = run_prism(
        env,
        "--provider",
        "openai-compatible",
        "--base-url",
        local_server.url,
        "--api-key-env",
        "LOCAL_KEY",
        "-p",
        "hi",
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("prism: warning: ")
    assert "shorter than 4 characters" in err and "RuntimeWarning" not in err
    assert local_server.requests[-1]["headers"]["Authorization"] == "Bearer x"


def test_a_closed_port_and_a_missing_url_are_one_line_errors(cli_env: dict[str, str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"  # nothing listens there now
    done = run_prism(cli_env, "--provider", "openai-compatible", "--base-url", url, "-p", "hi")
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1, err
    assert err.startswith("prism: error: ") and f"127.0.0.1:{port}" in err
    missing = run_prism(cli_env, "--provider", "openai-compatible", "-p", "hi")
    assert missing.returncode == 2 and b"needs --base-url URL" in missing.stderr
    not_url = run_prism(
        cli_env, "--provider", "openai-compatible", "--base-url", "localhost:1234", "-p", "hi"
    )
    assert not_url.returncode == 2 and b"--base-url" in not_url.stderr
    assert not_url.stderr.count(b"\n") == 1


def test_verbose_shows_the_request_and_never_the_key(
    cli_env: dict[str, str], local_server: LocalServer
) -> None:
    key = "sk-local-verbose-7c2e9a41"
    env = {**cli_env, "LOCAL_KEY": key}
    done = run_prism(
        env,
        "-v",
        "--provider",
        "openai-compatible",
        "--base-url",
        local_server.url,
        "--api-key-env",
        "LOCAL_KEY",
        "-p",
        f"my key is {key}",
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    assert f"POST {local_server.url}/chat/completions" in err
    assert '"Authorization": "<redacted>"' in err and "hello from local" in err
    assert key not in err and done.stdout.decode().strip() == "hello from local"
    assert local_server.requests[-1]["headers"]["Authorization"] == f"Bearer {key}"
