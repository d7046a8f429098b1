"""A secret the provider splits across deltas never reaches a listener: each
block's deltas go through one stream redactor, and the joined deltas equal the
redacted, mended finished message (text and thinking)."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_helpers import make_agent, record

from prism.providers import (
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call_delta,
)
from prism.security.redaction import create_redactor
from prism.security.stream_redaction import StreamRedactor

pytestmark = pytest.mark.anyio

SECRET = "sk-live-1234567890"
QUOTED = 'tok"en-98765'  # its JSON spelling tok\"en-98765 is masked too
SECRETS = [SECRET, QUOTED]


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in pairwise(bounds) if b > a]


def _stream(deltas: list[str], secrets: list[str] = SECRETS) -> tuple[list[str], str]:
    redactor = create_redactor(secrets)
    stream = StreamRedactor(redactor)
    out = [stream.feed(d) for d in deltas]
    out.append(stream.flush())
    return out, redactor.redact_text("".join(deltas))


def _no_fragment(piece: str, secret: str = SECRET) -> bool:
    # No emitted piece ends with a proper prefix of 4+ characters of the secret
    # or starts with a proper suffix of it: such a piece would show part of it.
    return not any(piece.endswith(secret[:k]) for k in range(4, len(secret))) and not any(
        piece.startswith(secret[k:]) for k in range(1, len(secret) - 3)
    )


def test_a_secret_split_at_every_position_is_masked_whole() -> None:
    text = f"the key {SECRET} ends here"
    for cut in range(1, len(text)):
        out, expected = _stream([text[:cut], text[cut:]])
        assert "".join(out) == expected == "the key [REDACTED] ends here"
        assert all(SECRET not in piece and _no_fragment(piece) for piece in out), (cut, out)


def test_three_and_many_deltas_and_a_quoted_secret() -> None:
    text = f"a {SECRET} b {QUOTED} c " + json.dumps(QUOTED)
    third = len(text) // 3
    for deltas in ([text[:third], text[third : 2 * third], text[2 * third :]], list(text)):
        out, expected = _stream(deltas)
        assert "".join(out) == expected
        assert SECRET not in expected and "98765" not in "".join(out)
        assert all(_no_fragment(piece) for piece in out)


def test_overlapping_secrets_follow_leftmost_longest() -> None:
    # A complete secret ("xyab") overlapping the start of another ("abcd") must
    # not be emitted half: the whole-text redaction masks it.
    secrets = ["xyab", "abcd", "abcdef"]
    for text in ("..xyabcd..", "..abcdef..", "..abcdeX.."):
        for cut in range(1, len(text)):
            out, expected = _stream([text[:cut], text[cut:]], secrets)
            assert "".join(out) == expected, (text, cut, out)


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet="sk-live123 \n", max_size=12),
    after=st.text(alphabet="sk-live123 \n", max_size=12),
    cuts=st.lists(st.integers(min_value=1, max_value=60), max_size=8),
)
def test_any_split_of_any_text_joins_to_the_redacted_text(
    before: str, after: str, cuts: list[int]
) -> None:
    text = before + SECRET + after
    out, expected = _stream(_pieces(text, [c for c in cuts if c < len(text)]))
    assert "".join(out) == expected
    assert all(SECRET not in piece for piece in out)


def test_a_surrogate_pair_split_across_deltas_arrives_whole() -> None:
    for secrets in ([], SECRETS):
        out, _ = _stream(["smile \ud83d", "\ude00 done", " lone \ud800"], secrets)
        assert out[0] == "smile " and "".join(out) == "smile \U0001f600 done lone \ufffd"


def test_without_secrets_plain_text_passes_straight_through() -> None:
    stream = StreamRedactor(create_redactor([]))
    assert stream.feed("partial wor") == "partial wor" and stream.flush() == ""


def _split_script(text: str, kind: str) -> list[Any]:
    make = provider_text_delta if kind == "text" else provider_thinking_delta
    return [*(make(ch) for ch in text), provider_done()]


@pytest.mark.parametrize("kind", ["text", "thinking"])
async def test_listeners_never_see_a_split_secret(kind: str) -> None:
    text = f"use {SECRET} now \ud83d\ude00"
    agent = make_agent(_split_script(text, kind), secrets=[SECRET])
    session = agent.create_session()
    events = record(session)
    await session.run("hi")
    deltas = [e["delta"]["text"] for e in events if e["type"] == "message_delta"]
    assert all(e["delta"]["type"] == kind for e in events if e["type"] == "message_delta")
    assert all(_no_fragment(d) for d in deltas) and "1234567890" not in "".join(deltas)
    finished = next(e for e in events if e["type"] == "message_finished")
    block = finished["message"]["content"][0]
    assert block["type"] == kind and "".join(deltas) == block["text"]
    assert block["text"] == "use [REDACTED] now \U0001f600"
    # The held tail is emitted before the message that closes the block.
    kinds = [e["type"] for e in events]
    assert kinds.index("message_finished") > max(
        i for i, k in enumerate(kinds) if k == "message_delta"
    )


async def test_tool_call_arguments_split_across_deltas_reach_no_event() -> None:
    # Argument deltas are not emitted as events; the finished call is redacted whole.
    arguments = json.dumps({"text": SECRET})
    script = [
        provider_tool_call_delta(0, id="c1", name="echo"),
        *(provider_tool_call_delta(0, arguments_delta=ch) for ch in arguments),
        provider_done(),
    ]
    agent = make_agent([script, [provider_text_delta("ok"), provider_done()]], secrets=[SECRET])
    session = agent.create_session()
    events = record(session)
    await session.run("hi")
    dumped = json.dumps(events)
    assert "1234567890" not in dumped and "[REDACTED]" in dumped
