"""Token estimation over a ~900-message / ~5 MB coding-session request.

Baselines in the same run: the pure-Python oracle (regex-assisted escape
counting), a naive per-character variant of it, and an orjson-assisted walk
(the same per-block rules, with orjson serializing each payload and `len`
of the decoded text counting code points).
"""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
from benches.fixtures.session import build_request
from tests.oracles import tokens as oracle

from prism import _native as native

REQUEST = build_request()
MESSAGES: list[dict[str, Any]] = REQUEST["messages"]
_SHORT = set('"\\\n\r\t\b\f')


def _orjson_chars(value: Any) -> int:
    return len(orjson.dumps(value).decode())


def orjson_message_tokens(message: dict[str, Any]) -> int:
    total = oracle.MESSAGE_OVERHEAD_TOKENS
    for block in message["content"]:
        kind = block["type"]
        if kind in ("text", "thinking"):
            chars = len(block["text"])
        elif kind == "image":
            total += oracle.IMAGE_TOKENS
            continue
        elif kind == "tool_call":
            chars = len(block["name"]) + _orjson_chars(block["arguments"])
        elif kind == "tool_result":
            chars = len(block["name"]) + _orjson_chars(block["result"])
        else:
            chars = _orjson_chars(block)
        total += math.ceil(chars / 4)
    return total


def naive_string_length(s: str) -> int:
    n = len(s) + 2
    for ch in s:
        if ch in _SHORT:
            n += 1
        elif ch < " ":
            n += 5
    return n


def test_all_variants_agree() -> None:
    # orjson writes floats differently from repr(); the fixture's floats are
    # short enough that both agree, which this check guards.
    want = sum(oracle.estimate_message_tokens(m) for m in MESSAGES)
    assert sum(native.estimate_message_tokens(m) for m in MESSAGES) == want
    assert sum(orjson_message_tokens(m) for m in MESSAGES) == want


@pytest.mark.benchmark(group="estimate-5MB")
def test_estimate_native(benchmark: Any) -> None:
    benchmark(lambda: sum(native.estimate_message_tokens(m) for m in MESSAGES))


@pytest.mark.benchmark(group="estimate-5MB")
def test_estimate_orjson_walk(benchmark: Any) -> None:
    benchmark(lambda: sum(orjson_message_tokens(m) for m in MESSAGES))


@pytest.mark.benchmark(group="estimate-5MB")
def test_estimate_oracle(benchmark: Any) -> None:
    benchmark.pedantic(
        lambda: sum(oracle.estimate_message_tokens(m) for m in MESSAGES), rounds=5, iterations=1
    )


@pytest.mark.benchmark(group="estimate-5MB")
def test_estimate_oracle_naive_chars(benchmark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oracle, "string_length", naive_string_length)
    benchmark.pedantic(
        lambda: sum(oracle.estimate_message_tokens(m) for m in MESSAGES), rounds=3, iterations=1
    )
