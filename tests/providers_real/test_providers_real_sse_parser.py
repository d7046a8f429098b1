"""The native adapters' SSE parser: any split of the stream gives the same
events (CRLF, CR and LF line ends, comments, multi-line data)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from prism.providers._http_stream import SSEParser

BODY = (
    ": keep-alive\r\n\r\n"
    'event: message_start\r\ndata: {"a": 1}\r\n\r\n'
    "data: line one\ndata: line two\n\n"
    "event: ping\rdata:x\r\r"
    "id: 7\nretry: 100\n\n"
    "data: 日本語 🎉\n\n"
)
EXPECTED = [
    ("message_start", '{"a": 1}'),
    ("message", "line one\nline two"),
    ("ping", "x"),
    ("message", "日本語 🎉"),
]


def parse(pieces: list[str]) -> list[tuple[str, str]]:
    parser = SSEParser()
    return [event for piece in pieces for event in parser.feed(piece)]


def test_whole_body() -> None:
    assert parse([BODY]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    assert parse(pieces) == EXPECTED
