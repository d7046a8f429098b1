from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from tests.native.native_strategies import json_values, messages, nest, texts
from tests.oracles import tokens as oracle

from prism import _native as native


def dumps_len(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def test_constants_match_oracle() -> None:
    assert native.MAX_DEPTH == oracle.MAX_DEPTH
    assert native.IMAGE_TOKENS == oracle.IMAGE_TOKENS
    assert native.MESSAGE_OVERHEAD_TOKENS == oracle.MESSAGE_OVERHEAD_TOKENS


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_json_length_equals_json_dumps(value: Any) -> None:
    assert native.json_length(value) == dumps_len(value) == oracle.json_length(value)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_value_tokens_are_ceil_quarter(value: Any) -> None:
    want = math.ceil(dumps_len(value) / 4)
    assert native.estimate_value_tokens(value) == want == oracle.estimate_value_tokens(value)


@settings(max_examples=200, deadline=None)
@given(texts)
def test_text_tokens(text: str) -> None:
    assert native.estimate_text_tokens(text) == math.ceil(len(text) / 4)
    assert native.estimate_text_tokens(text) == oracle.estimate_text_tokens(text)


@settings(max_examples=200, deadline=None)
@given(messages)
def test_message_tokens_match_oracle(message: dict[str, Any]) -> None:
    assert native.estimate_message_tokens(message) == oracle.estimate_message_tokens(message)
    entry = {"id": "e", "sessionId": "s", "parentId": None, "kind": "message", "message": message}
    assert native.estimate_entry_tokens(entry) == oracle.estimate_entry_tokens(entry)


def test_message_rules_by_hand() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hello"},  # 5 chars -> 2
            {"type": "thinking", "text": "abcd"},  # 4 -> 1
            {"type": "image", "data": "x" * 10_000, "mimeType": "image/png"},
            {"type": "tool_call", "id": "1", "name": "ls", "arguments": {"p": "."}},  # 2+9 -> 3
            {"type": "tool_result", "toolCallId": "1", "name": "ls", "result": [1]},  # 2+3 -> 2
        ],
    }
    want = 4 + 2 + 1 + native.IMAGE_TOKENS + 3 + 2
    assert native.estimate_message_tokens(message) == want


def test_entry_kinds() -> None:
    base = {"id": "e", "sessionId": "s", "parentId": None}
    summary = {**base, "kind": "summary", "summary": "x" * 9}
    assert native.estimate_entry_tokens(summary) == 3 + native.MESSAGE_OVERHEAD_TOKENS
    compaction = {**base, "kind": "compaction", "summary": "abcd", "data": {}}
    assert native.estimate_entry_tokens(compaction) == 1 + native.MESSAGE_OVERHEAD_TOKENS
    for kind in ("model_change", "custom", "label"):
        assert native.estimate_entry_tokens({**base, "kind": kind}) == 4


def test_subclasses_and_big_numbers() -> None:
    import enum

    class Color(enum.IntEnum):
        RED = 12

    class S(str):
        pass

    value = {S("k"): [Color.RED, 10**100, -(2**63), 2**64, 1e16, 5e-324, (1, 2)]}
    assert native.json_length(value) == dumps_len(value)


def test_deep_nesting_at_the_limit() -> None:
    ok = nest(1, native.MAX_DEPTH)
    assert native.json_length(ok) == dumps_len(ok)
    okd = nest("x", native.MAX_DEPTH, as_dict=True)
    assert native.json_length(okd) == dumps_len(okd)


def test_lone_surrogates_count_like_json_dumps() -> None:
    value = {"a": "x\ud800y", "\udfff": 1}
    assert native.json_length(value) == dumps_len(value)


@pytest.mark.parametrize(
    ("value", "exc", "message"),
    [
        (b"x", TypeError, "Object of type bytes is not JSON serializable at $"),
        ({"a": {1, 2}}, TypeError, "Object of type set is not JSON serializable at $.a"),
        ([object()], TypeError, "Object of type object is not JSON serializable at $[0]"),
        ({"a": [float("nan")]}, ValueError, "not JSON compliant: nan at $.a[0]"),
        ({"a": float("-inf")}, ValueError, "not JSON compliant: -inf at $.a"),
        ({"x": {1: "a"}}, TypeError, "keys must be str, not int at $.x"),
        ({"odd key": [b""]}, TypeError, 'not JSON serializable at $["odd key"][0]'),
        ([10**5000], ValueError, "Exceeds the limit"),
    ],
)
def test_bad_values_name_the_path(value: Any, exc: type[Exception], message: str) -> None:
    with pytest.raises(exc) as caught:
        native.json_length(value)
    assert message in str(caught.value)
    with pytest.raises(exc) as from_oracle:
        oracle.json_length(value)
    assert message in str(from_oracle.value)


def test_request_path_in_error() -> None:
    request = {"messages": [{}, {}, {}, {"content": [{"arguments": {"x": b"\x00"}}]}]}
    with pytest.raises(TypeError, match=r"at \$\.messages\[3\]\.content\[0\]\.arguments\.x$"):
        native.json_length(request)


def test_too_deep_and_cycles_raise_instead_of_hanging() -> None:
    with pytest.raises(ValueError, match=r"MAX_DEPTH \(100\)"):
        native.json_length(nest(1, native.MAX_DEPTH + 1))
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="is it cyclic"):
        native.json_length(cyclic)
    d: dict[str, Any] = {}
    d["self"] = d
    with pytest.raises(ValueError, match=r"at \$\.self\.self"):
        native.estimate_value_tokens(d)


@pytest.mark.parametrize(
    ("message", "exc", "text"),
    [
        ("hi", TypeError, "message must be a dict, not str at $"),
        ({"role": "user"}, TypeError, "missing field 'content' at $"),
        ({"content": "hi"}, TypeError, "field 'content' must be a list, not str at $.content"),
        ({"content": [1]}, TypeError, "content block must be a dict, not int at $.content[0]"),
        ({"content": [{"text": "a"}]}, TypeError, "missing field 'type' at $.content[0]"),
        (
            {"content": [{"type": "text", "text": 3}]},
            TypeError,
            "field 'text' must be a str, not int at $.content[0].text",
        ),
        (
            {"content": [{"type": "tool_call", "name": "f", "arguments": {"a": {3}}}]},
            TypeError,
            "at $.content[0].arguments.a",
        ),
        (
            {"content": [{"type": "tool_result", "name": "f"}]},
            TypeError,
            "missing field 'result' at $.content[0]",
        ),
    ],
)
def test_bad_messages(message: Any, exc: type[Exception], text: str) -> None:
    with pytest.raises(exc) as caught:
        native.estimate_message_tokens(message)
    assert str(caught.value).endswith(text)
    with pytest.raises(exc) as from_oracle:
        oracle.estimate_message_tokens(message)
    assert str(from_oracle.value) == str(caught.value)


def test_bad_entries() -> None:
    with pytest.raises(ValueError, match=r"unknown entry kind 'nope' at \$\.kind"):
        native.estimate_entry_tokens({"kind": "nope"})
    with pytest.raises(TypeError, match=r"missing field 'summary' at \$$"):
        native.estimate_entry_tokens({"kind": "summary"})
    with pytest.raises(TypeError, match=r"at \$\.message\.content\[0\]"):
        native.estimate_entry_tokens({"kind": "message", "message": {"content": [None]}})
    with pytest.raises(TypeError):
        native.estimate_text_tokens(b"bytes")  # type: ignore[arg-type]


def test_value_is_not_mutated() -> None:
    value = {"a": [1, "two", {"b": None}]}
    before = json.dumps(value)
    native.json_length(value)
    native.estimate_value_tokens(value)
    assert json.dumps(value) == before


def test_big_strings_and_keys_still_name_paths() -> None:
    big = "a\n" * (1 << 20)  # 2 MiB
    value = {"k": [big, {"x": big}]}
    assert native.json_length(value) == dumps_len(value)
    with pytest.raises(TypeError, match=r"at \$\.k\[2\]$"):
        native.json_length({"k": [big, 1, b""]})
    with pytest.raises(TypeError) as caught:
        native.json_length({big: b""})
    assert str(caught.value).endswith('at $["' + "a\\n" * 32 + '"]')  # keys shown up to 64 chars
