"""Server-sent events for every streaming provider adapter: the data events
of a stream (parsed by httpx-sse) with a stall timer, and text deltas joined
across chunk boundaries.

The one SSE layer of Prism: the Chat Completions, Anthropic Messages and
Responses adapters all read their streams here, so each gets the same two
guarantees:

- **A stall ends the stream.** httpx's read timeout counts time since the last
  *byte*, and a server that sends only keep-alive comments (OpenRouter
  documents them) resets it forever. :func:`iter_sse_data` counts time since
  the last *data* event instead; comments and empty events do not count.
- **Text survives chunk boundaries.** The bytes are decoded as UTF-8 whatever
  charset the response declares (SSE is UTF-8 by definition) with an
  incremental decoder, so a character split across network reads is whole;
  and :class:`TextJoiner` joins a UTF-16 surrogate pair that a server split
  across two JSON chunks (``"\\ud83d"`` then ``"\\ude00"``), which would
  otherwise leave two lone surrogates no store can encode as UTF-8.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Final

import anyio

from prism._text import SURROGATE, mend_surrogates
from prism.errors import ConfigError

if TYPE_CHECKING:
    from httpx_sse import EventSource

__all__ = [
    "DEFAULT_STALL_TIMEOUT_S",
    "StreamStalled",
    "TextJoiner",
    "check_stall_timeout",
    "iter_sse_data",
]

DEFAULT_STALL_TIMEOUT_S: Final = 60.0
"""How long a stream may go without a data event. The same minute as the
per-chunk read timeout: a slow first token from a loaded server (reasoning
models stream reasoning deltas meanwhile) fits, a server that only pings
does not."""

_REPLACEMENT: Final = "\ufffd"


class StreamStalled(Exception):
    """No data event arrived for ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no data for {seconds:g} s")
        self.seconds = seconds


def check_stall_timeout(value: object) -> float | None:
    """``value`` as a stall timeout: a positive finite number of seconds, or
    ``None`` (no stall timer; the transport's own timeouts still apply)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"stall_timeout must be a positive number of seconds, got {value!r}")
    return float(value)


async def iter_sse_data(
    source: EventSource, stall_timeout: float | None
) -> AsyncGenerator[tuple[str, str], None]:
    """``(event name, data)`` of each event of ``source`` that carries data
    (whitespace stripped), in order; the name is ``"message"`` when the
    server sent none.

    Raises :class:`StreamStalled` when ``stall_timeout`` seconds pass without
    a data event while this generator waits for the server. The clock starts
    when the caller asks for the next event (time the consumer spends on an
    event is not the server's), and comments or empty events never reset
    it. Close the generator (``aclosing``) to close the event iterator."""
    # SSE is UTF-8 whatever the header says; set before the body is read, so
    # httpx decodes incrementally as UTF-8 (a character split across reads
    # stays whole) instead of trusting a mislabelled charset.
    source.response.encoding = "utf-8"
    events = source.aiter_sse()
    try:
        while True:
            deadline = math.inf if stall_timeout is None else anyio.current_time() + stall_timeout
            while True:
                # The scope covers only the wait for the server, never a yield:
                # the consumer's code must not run inside this generator's scope.
                with anyio.CancelScope(deadline=deadline) as waiting:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        return
                if waiting.cancelled_caught:
                    assert stall_timeout is not None
                    raise StreamStalled(stall_timeout)
                data = event.data.strip()
                if data:
                    break
            yield event.event, data
    finally:
        await events.aclose()


class TextJoiner:
    """Joins one text stream's deltas across chunk boundaries.

    A high surrogate at the end of a delta is held back until the next one,
    so a pair split across two chunks comes out as one character; a surrogate
    that stays alone (the server sent half a pair) becomes U+FFFD, the same as
    a UTF-8 decoder does with a broken byte sequence. Plain text (no surrogate
    code point, the usual case) passes through untouched."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        if self._pending:
            text = self._pending + text
            self._pending = ""
        if text.isascii() or SURROGATE.search(text) is None:
            return text
        if "\ud800" <= text[-1] <= "\udbff":
            self._pending = text[-1]
            text = text[:-1]
        return mend_surrogates(text)

    def flush(self) -> str:
        """What is still held back at the end of the stream: a lone half."""
        pending, self._pending = self._pending, ""
        return _REPLACEMENT if pending else ""
