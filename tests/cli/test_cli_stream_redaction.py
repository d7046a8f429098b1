"""A key the model streams back split across many deltas reaches no output
of ``prism -p`` (raw text) or ``--mode json`` (events): a real loopback SSE
server, real ``prism`` processes, the key known to the agent via
``--api-key-env``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from conftest import run_prism

KEY = "sk-stream-7Q9xZ2wV4pL8"
ANSWER = f"the key is {KEY} \ud83d\ude00 ok"


def _reply() -> bytes:
    # One chunk per character: the key and the emoji's surrogate pair (two
    # JSON escapes) are split at every position.
    pieces = [KEY[i] for i in range(len(KEY))]
    text = ["the key is ", *pieces, " ", "\ud83d", "\ude00", " ok"]
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in text]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return body.encode()


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    reply = _reply()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _fragments() -> list[str]:
    return [KEY[a : a + 5] for a in range(len(KEY) - 4)]


@pytest.mark.parametrize("mode", [(), ("--mode", "json")])
def test_a_split_key_reaches_no_output(
    cli_env: dict[str, str], server_url: str, mode: tuple[str, ...]
) -> None:
    env = {**cli_env, "STREAM_KEY": KEY}
    done = run_prism(
        env,
        *mode,
        "--provider",
        "openai-compatible",
        "--base-url",
        server_url,
        "--api-key-env",
        "STREAM_KEY",
        "-p",
        "hi",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    leaked = [f for f in _fragments() if f in out or f in done.stderr.decode()]
    assert not leaked, out
    if not mode:
        assert out.strip() == "the key is [REDACTED] \U0001f600 ok"
        return
    events = [json.loads(line)["event"] for line in out.splitlines() if line.strip()]
    deltas = [e["delta"]["text"] for e in events if e.get("type") == "message_delta"]
    finished = [e for e in events if e.get("type") == "message_finished"]
    assert "".join(deltas) == finished[-1]["message"]["content"][0]["text"]
    assert "".join(deltas) == "the key is [REDACTED] \U0001f600 ok"
