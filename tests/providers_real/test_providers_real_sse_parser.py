"""The one SSE layer every adapter reads through (``iter_sse_data`` on
httpx-sse): any split of the stream's bytes gives the same events (CRLF, CR
and LF line ends, comments, multi-line data, a character cut in half)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
from httpx_sse import aconnect_sse
from hypothesis import given, settings
from hypothesis import strategies as st

from prism.providers._sse import iter_sse_data

BODY = (
    ": keep-alive\r\n\r\n"
    'event: message_start\r\ndata: {"a": 1}\r\n\r\n'
    "data: line one\ndata: line two\n\n"
    "event: ping\rdata:x\r\r"
    "id: 7\nretry: 100\n\n"
    "event: empty\ndata:\n\n"
    "data: 日本語 🎉\n\n"
).encode()
EXPECTED = [
    ("message_start", '{"a": 1}'),
    ("message", "line one\nline two"),
    ("ping", "x"),
    ("message", "日本語 🎉"),
]


class Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def read(pieces: list[bytes]) -> list[tuple[str, str]]:
    # A charset that is wrong on purpose: SSE is UTF-8 whatever the header says.
    headers = {"content-type": "text/event-stream; charset=latin-1"}
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, stream=Pieces(pieces))
    )

    async def main() -> list[tuple[str, str]]:
        async with (
            httpx.AsyncClient(transport=transport) as client,
            aconnect_sse(client, "GET", "http://test/") as source,
        ):
            return [event async for event in iter_sse_data(source, 5.0)]

    return anyio.run(main)


def test_whole_body() -> None:
    assert read([BODY]) == EXPECTED


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    assert read([piece for piece in pieces if piece]) == EXPECTED
