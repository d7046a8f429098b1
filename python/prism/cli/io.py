"""Byte-level line I/O for the CLI: one stdout writer, one stdin line reader.

Both work on bytes on purpose. Text-mode streams use universal newlines
(``\\r`` alone ends a line) and ``str.splitlines`` also breaks on U+2028 and
U+2029, which JSON allows raw inside strings; the RPC framing is LF only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

# A request line longer than this is answered with an error instead of being
# buffered without bound (a client that never sends "\n" cannot exhaust memory).
MAX_LINE_BYTES = 16 * 1024 * 1024


def encode_line(value: Any) -> bytes:
    """Compact JSON plus "\\n". U+2028/U+2029 are escaped so that even a
    client splitting with ``str.splitlines`` sees one message per line."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return (text + "\n").encode("utf-8")


class LineWriter:
    """The only thing that writes to stdout: whole lines, each flushed.

    Writes happen under a lock so output from worker threads (if any ever
    writes) cannot interleave with the event loop's; within the event loop a
    write+flush is synchronous, so no other task runs in between.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False

    def write_json(self, value: Any) -> None:
        self.write_bytes(encode_line(value))

    def write_text(self, text: str) -> None:
        """Raw text with no newline added (print mode's assistant deltas)."""
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        with self._lock:
            if self.closed:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (BrokenPipeError, ValueError):
                # The reader went away (or stdout was closed): stop writing
                # rather than crash mid-run; the exit code reports the rest.
                self.closed = True


class LineTooLong(Exception):
    """A request line exceeded MAX_LINE_BYTES; the rest of it was discarded."""


def split_request_line(raw: bytes) -> bytes:
    """Drop the LF terminator and at most one CR before it."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw


def _read_line_blocking(stream: BinaryIO, limit: int) -> bytes | LineTooLong:
    # Binary readline splits on b"\n" only, which is exactly the framing.
    line = stream.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while True:  # discard the rest of the oversized line
        chunk = stream.readline(1 << 16)
        if not chunk or chunk.endswith(b"\n"):
            return LineTooLong(f"request line exceeds {limit} bytes")


async def iter_request_lines(
    stream: BinaryIO, *, limit: int = MAX_LINE_BYTES
) -> AsyncIterator[bytes | LineTooLong]:
    """Yield each request line (terminator stripped) until EOF.

    Reads happen in a worker thread so the event loop keeps streaming runs
    while the client is quiet. A final line without "\\n" still counts.
    """
    while True:
        line = await anyio.to_thread.run_sync(
            _read_line_blocking, stream, limit, abandon_on_cancel=True
        )
        if isinstance(line, LineTooLong):
            yield line
            continue
        if not line:
            return
        yield split_request_line(line)
