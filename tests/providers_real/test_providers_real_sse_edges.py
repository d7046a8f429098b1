"""The edges of an SSE stream (issue 34 items 12 and 13): a server that only
sends keep-alive comments is a stall, and text split across chunks (a UTF-16
surrogate pair across two JSON chunks, a UTF-8 character across two reads of
a mislabelled stream) comes out whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from providers_real_support import (
    ByteStream,
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    split_every,
    sse_lines,
    sse_response,
)

from prism.errors import ConfigError
from prism.providers._sse import TextJoiner
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.retry import is_transient_error_info
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.stores import create_jsonl_session_store

pytestmark = pytest.mark.anyio

# Bounds a test that would otherwise hang forever before the fix; never
# reached when the stall timer works.
GUARD_S = 30


class PacedStream(httpx.AsyncByteStream):
    """Sends each piece after a short pause, like a server trickling bytes;
    with ``forever`` it repeats the last piece without end."""

    def __init__(self, pieces: list[bytes], pause: float, *, forever: bool = False) -> None:
        self.pieces = pieces
        self.pause = pause
        self.forever = forever
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            await anyio.sleep(self.pause)
            self.sent += 1
            yield piece
        while self.forever:
            await anyio.sleep(self.pause)
            self.sent += 1
            yield self.pieces[-1]


def paced_response(stream: PacedStream) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)


def data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


async def test_a_stream_of_only_comments_stalls_after_the_stall_timeout() -> None:
    stream = PacedStream([b": OPENROUTER PROCESSING\n\n"], 0.01, forever=True)
    provider = make_provider(Recorder(lambda: paced_response(stream)), stall_timeout=0.3)
    with anyio.fail_after(GUARD_S):
        events = await collect(provider, simple_request())
    assert [e["type"] for e in events] == ["error"]
    error = events[0]["error"]
    assert error["code"] == "ETIMEDOUT" and is_transient_error_info(error)
    assert error["message"] == (
        "openai-compatible: stream stalled: no data for 0.3 s (keep-alive comments do not "
        "count): POST https://llm.example.invalid/v1/chat/completions"
    )
    assert stream.sent > 1  # the comments did arrive; they just do not count


async def test_a_stall_after_text_keeps_the_text_and_the_usage() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    pieces = [data(chunk(content="half")), data(chunk(usage=usage, no_choices=True)), b": ping\n\n"]
    stream = PacedStream(pieces, 0.01, forever=True)
    provider = make_provider(Recorder(lambda: paced_response(stream)), stall_timeout=0.3)
    with anyio.fail_after(GUARD_S):
        events = await collect(provider, simple_request())
    assert [e["type"] for e in events] == ["content_delta", "error"]
    assert events[1]["error"]["details"]["usage"]["inputTokens"] == 5


async def test_data_events_restart_the_stall_timer() -> None:
    # Five data events 0.15 s apart with comments between them: 0.75 s in
    # all, longer than the 0.5 s timer, which each data event restarts.
    pieces: list[bytes] = []
    for text in ("a", "b", "c", "d"):
        pieces += [b": ping\n\n", data(chunk(content=text))]
    pieces += [data(chunk(finish="stop")), b"data: [DONE]\n\n"]
    provider = make_provider(
        Recorder(lambda: paced_response(PacedStream(pieces, 0.075))), stall_timeout=0.5
    )
    with anyio.fail_after(GUARD_S):
        events = await collect(provider, simple_request())
    assert [e.get("text") for e in events if e["type"] == "content_delta"] == list("abcd")
    assert events[-1] == {"type": "done", "stopReason": "stop"}


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "60", True])
def test_a_bad_stall_timeout_is_a_config_error(value: Any) -> None:
    with pytest.raises(ConfigError, match="stall_timeout must be a positive number"):
        create_openai_compatible_provider(
            base_url="http://127.0.0.1:1", stall_timeout=value, redactor=NOOP_REDACTOR
        )


def _split_pair_body() -> bytes:
    # The server splits one emoji (U+1F600, the pair D83D DE00) in half across
    # two chunks of each stream: JSON escapes for the text, raw code points
    # (what json.loads gives for them) for the tool arguments.
    call = {"index": 0, "id": "c1", "function": {"name": "note", "arguments": '{"t": "x\ud83d'}}
    rest = {"index": 0, "function": {"arguments": '\ude00"}'}}
    return sse_lines(
        [
            chunk(reasoning="hm \ud83d"),
            chunk(reasoning="\ude00"),
            chunk(content="a\ud83d"),
            chunk(content="\ude00b"),
            chunk(tool_calls=[call]),
            chunk(tool_calls=[rest]),
            chunk(finish="tool_calls"),
        ]
    )


async def test_a_surrogate_pair_split_across_two_chunks_is_one_character() -> None:
    body = _split_pair_body()
    assert b"\\ud83d" in body  # json.dumps escapes it: the halves travel apart
    provider = make_provider(Recorder(lambda: sse_response(ByteStream([body]))))
    events = await collect(provider, simple_request())
    text = "".join(e["text"] for e in events if e["type"] == "content_delta")
    thinking = "".join(e["text"] for e in events if e["type"] == "thinking_delta")
    assert (text, thinking) == ("a\U0001f600b", "hm \U0001f600")
    (call,) = [e["toolCall"] for e in events if e["type"] == "tool_call"]
    assert call["arguments"] == {"t": "x\U0001f600"}
    for event in events:  # every event can be written as UTF-8
        json.dumps(event, ensure_ascii=False).encode("utf-8")


async def test_a_split_pair_does_not_fail_a_run_on_a_real_store(tmp_path: Path) -> None:
    answer = sse_lines([chunk(content="a\ud83d"), chunk(content="\ude00b"), chunk(finish="stop")])
    provider = make_provider(Recorder(lambda: sse_response(ByteStream([answer]))))
    agent = create_agent(
        model={"provider": "openai-compatible", "model": "demo-model"},
        provider=provider,
        store=create_jsonl_session_store(tmp_path / "s.jsonl"),
    )
    result = await agent.create_session("s").run("hi")
    assert result.text == "a\U0001f600b"
    reread = await agent.open_session("s", must_exist=True)
    assert (await reread.messages())[-1]["content"][0]["text"] == "a\U0001f600b"


async def test_half_a_pair_the_server_never_completes_becomes_a_replacement_character() -> None:
    # A lone low half mid-text, and a high half that ends the stream.
    body = sse_lines(
        [chunk(content="a\udc00b"), chunk(content="tail \ud83d"), chunk(finish="stop")]
    )
    provider = make_provider(Recorder(lambda: sse_response(ByteStream([body]))))
    events = await collect(provider, simple_request())
    text = "".join(e["text"] for e in events if e["type"] == "content_delta")
    assert text == "a\ufffdbtail \ufffd"
    assert events[-1]["type"] == "done"


@pytest.mark.parametrize("size", [1, 2, 3])
async def test_utf8_split_across_reads_of_a_mislabelled_stream_is_whole(size: int) -> None:
    # SSE is UTF-8 by definition; a server that labels it latin-1 used to
    # turn every multi-byte character into mojibake.
    body = sse_lines([chunk(content="héllo wörld 🌍"), chunk(finish="stop")], done=True)
    body = body.replace(b"\\u00e9", "é".encode()).replace(b"\\u00f6", "ö".encode())
    body = body.replace(b"\\ud83c\\udf0d", "🌍".encode())
    assert "é".encode() in body and "🌍".encode() in body  # raw UTF-8 bytes on the wire
    stream = ByteStream(split_every(body, size))
    provider = make_provider(
        Recorder(
            lambda: sse_response(
                stream, headers={"content-type": "text/event-stream; charset=latin-1"}
            )
        )
    )
    events = await collect(provider, simple_request())
    assert events[0] == {"type": "content_delta", "text": "héllo wörld 🌍"}


@given(st.text(), st.lists(st.integers(min_value=0, max_value=64), max_size=8))
def test_text_joiner_gives_back_any_text_however_its_code_units_are_split(
    text: str, cuts: list[int]
) -> None:
    # Work on UTF-16 code units, the way a JSON encoder with \u escapes sees
    # the text, and cut anywhere, pairs included.
    units = text.encode("utf-16-le")
    code_units = [units[i : i + 2] for i in range(0, len(units), 2)]
    points = sorted({min(c, len(code_units)) for c in cuts})
    pieces: list[str] = []
    start = 0
    for point in [*points, len(code_units)]:
        raw = b"".join(code_units[start:point])
        pieces.append(raw.decode("utf-16-le", "surrogatepass"))
        start = point
    joiner = TextJoiner()
    joined = "".join(joiner.feed(piece) for piece in pieces) + joiner.flush()
    assert joined == text
