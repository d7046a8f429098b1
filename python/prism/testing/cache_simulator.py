"""A prompt-cache simulator that speaks the Anthropic Messages API on loopback.

It bills a request the way an explicit-breakpoint prompt cache does, so a
host (or Prism's benchmark) can measure where its ``cache_control``
breakpoints pay off without a network or an account:

- the request is a sequence of blocks in the API's prefix order (tools,
  system blocks, then every message's content blocks); a block counts
  ``ceil(len(compact JSON) / 4)`` tokens, ``cache_control`` excluded;
- a block carrying ``cache_control`` is a breakpoint: on a request the cache
  is searched at each breakpoint and up to ``lookback`` blocks before it for
  a live entry of exactly that prefix; the longest one found is read;
- afterwards every breakpoint beyond the read prefix whose prefix holds at
  least ``min_tokens`` is written (an entry lives ``ttl_s`` seconds of the
  simulator's clock and a read refreshes it); the write bills the tokens from
  the read prefix to the furthest written breakpoint;
- usage comes back as the API reports it: ``input_tokens`` (neither read
  nor written), ``cache_read_input_tokens``, ``cache_creation_input_tokens``.

Responses are scripted: ``responder(body)`` returns the content blocks of
the answer (``text``, ``thinking`` with ``signature``, ``tool_use``), which
are streamed as Messages SSE events. Standard library only; the server runs
in a daemon thread, serves 127.0.0.1, and :meth:`CacheSimulator.close` stops
it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CacheSimulator", "SimulatedRequest", "block_tokens"]

Responder = Callable[[dict[str, Any]], list[dict[str, Any]]]


def block_tokens(block: Any) -> int:
    """The simulator's token count of one block (``cache_control`` excluded)."""
    return -(-len(_canonical(block)) // 4)


def _canonical(block: Any) -> str:
    if isinstance(block, dict) and "cache_control" in block:
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


@dataclass
class SimulatedRequest:
    """What the simulator billed for one request."""

    total: int
    read: int
    written: int
    breakpoints: int
    blocks: int

    @property
    def fresh(self) -> int:
        return self.total - self.read - self.written


@dataclass
class CacheSimulator:
    """Start with :meth:`start`; ``url`` is the base URL for the Anthropic adapter."""

    responder: Responder
    min_tokens: int = 1024
    ttl_s: float = 300.0
    lookback: int = 20
    clock: Callable[[], float] = field(default=lambda: 0.0)
    log: list[SimulatedRequest] = field(default_factory=list)
    _entries: dict[bytes, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("cache simulator is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> CacheSimulator:
        simulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                    payload = b"".join(simulator.handle(body))
                except (ValueError, KeyError, TypeError) as exc:
                    error = {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": str(exc)},
                    }
                    data = json.dumps(error).encode()
                    self.send_response(400)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> CacheSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- billing ---------------------------------------------------------------

    def bill(self, body: dict[str, Any]) -> SimulatedRequest:
        """Look up and write the cache for one request body; returns the bill."""
        blocks = list(_prefix_blocks(body))
        hashes: list[bytes] = []
        sizes: list[int] = []
        running = hashlib.sha256()
        total = 0
        for block in blocks:
            text = _canonical(block)
            running.update(text.encode())
            hashes.append(running.copy().digest())
            total += -(-len(text) // 4)
            sizes.append(total)
        marks = [i for i, b in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b]
        now = self.clock()
        with self._lock:
            hit = -1
            for mark in marks:
                for position in range(mark, max(-1, mark - self.lookback - 1), -1):
                    expires = self._entries.get(hashes[position])
                    if expires is not None and expires > now:
                        hit = max(hit, position)
                        break
            read = sizes[hit] if hit >= 0 else 0
            if hit >= 0:
                self._entries[hashes[hit]] = now + self.ttl_s
            furthest = hit
            for mark in marks:
                if mark > hit and sizes[mark] >= self.min_tokens:
                    self._entries[hashes[mark]] = now + self.ttl_s
                    furthest = max(furthest, mark)
            written = sizes[furthest] - read if furthest > hit else 0
            bill = SimulatedRequest(total, read, written, len(marks), len(blocks))
            self.log.append(bill)
        return bill

    def handle(self, body: dict[str, Any]) -> Iterator[bytes]:
        bill = self.bill(body)
        blocks = self.responder(body)
        usage = {
            "input_tokens": bill.fresh,
            "cache_creation_input_tokens": bill.written,
            "cache_read_input_tokens": bill.read,
            "output_tokens": 1,
        }
        yield _sse(
            {
                "type": "message_start",
                "message": {"id": "msg_sim", "role": "assistant", "content": [], "usage": usage},
            }
        )
        output = 0
        for index, block in enumerate(blocks):
            yield from _block_events(index, block)
            output += block_tokens(block)
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        yield _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": output},
            }
        )
        yield _sse({"type": "message_stop"})


def _prefix_blocks(body: dict[str, Any]) -> Iterator[Any]:
    yield from body.get("tools") or []
    system = body.get("system")
    if isinstance(system, str):
        yield {"type": "text", "text": system}
    elif isinstance(system, list):
        yield from system
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        else:
            yield from content


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    kind = block["type"]
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        partial = json.dumps(block["input"], separators=(",", ":"))
        deltas = [{"type": "input_json_delta", "partial_json": partial}]
    else:
        raise ValueError(f"responder returned an unknown block type {kind!r}")
    yield _sse({"type": "content_block_start", "index": index, "content_block": start})
    for delta in deltas:
        yield _sse({"type": "content_block_delta", "index": index, "delta": delta})
    yield _sse({"type": "content_block_stop", "index": index})


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()
