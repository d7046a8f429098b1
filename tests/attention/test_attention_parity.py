"""native attention_plan == the pure-Python oracle on generated requests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.oracles import attention_oracle as oracle

from prism import _native
from prism._native import Redactor

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=0), max_size=60)
json_leaf = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | text
json_value = st.recursive(
    json_leaf | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
ids = st.sampled_from(["c1", "c2", "c3", "c4", "c5", 'q"x', "é✓", "c\n"])
names = st.sampled_from(["read", "grep", "pay", "naïve", 'we"ird'])
meta = st.sampled_from([None, {}, {"approval": True}, {"decisions": []}, {"note": 1}])


@st.composite
def tool_result(draw: Any) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "toolCallId": draw(ids),
        "name": draw(names),
        "result": draw(
            json_value | st.text(min_size=50, max_size=600) | st.just("secret-xyz " * 30)
        ),
    }
    if draw(st.booleans()):
        block["isError"] = draw(st.booleans())
    m = draw(meta)
    if m is not None:
        block["metadata"] = m
    return block


block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.builds(
        lambda t, s: {"type": "thinking", "text": t * 5, **({"signature": s} if s else {})},
        text,
        st.sampled_from(["", "sig1", "sig2"]),
    ),
    st.builds(lambda: {"type": "image", "url": "https://x"}),
    st.builds(
        lambda i, n, a: {"type": "tool_call", "id": i, "name": n, "arguments": a},
        ids,
        names,
        st.dictionaries(text, json_value, max_size=3),
    ),
    tool_result(),
    json_value,
)


@st.composite
def message(draw: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": draw(st.sampled_from(["user", "assistant", "tool", "system"])),
        "content": draw(st.lists(block, max_size=4)),
    }
    if draw(st.booleans()):
        msg["id"] = draw(st.sampled_from(["m1", "m2", "m3"]))
    m = draw(meta)
    if m is not None:
        msg["metadata"] = m
    return msg


short = st.lists(message(), max_size=1)
long = st.lists(message(), max_size=8)
groups = st.tuples(short, short, long, short, short, long).map(list)
extras = st.lists(st.lists(json_value, max_size=1), min_size=3, max_size=3)
MUTABLE = [False, False, True, False, False, True]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    groups=groups,
    extras=extras,
    scale=st.floats(-0.2, 1.3),
    trigger=st.floats(0.05, 0.95),
    target=st.none() | st.floats(0.5, 1.0),
    keep_turns=st.integers(0, 3),
    keep_last=st.integers(0, 3),
    exclude=st.lists(names, max_size=2),
    sticky_t=st.lists(st.sampled_from(["m1", "call:c1", "call:c2", "m3"]), max_size=3),
    sticky_i=st.lists(ids, max_size=3),
    redact=st.booleans(),
)
def test_native_plan_matches_oracle(
    groups: list[list[Any]],
    extras: list[list[Any]],
    scale: float,
    trigger: float,
    target: float | None,
    keep_turns: int,
    keep_last: int,
    exclude: list[str],
    sticky_t: list[str],
    sticky_i: list[str],
    redact: bool,
) -> None:
    redactor = Redactor(["secret-xyz", "naïve-key"]) if redact else None
    sticky = (dict.fromkeys(sticky_t), dict.fromkeys(sticky_i), redactor)
    # Put the gate between "fully shrunk" and "untouched" (scale < 1), or past
    # the request (scale > 1), so every branch of the planner gets exercised.
    floor = oracle.plan(
        groups, MUTABLE, extras, 1, 0.5, None, keep_turns, keep_last, exclude, *sticky
    )
    span = floor["used"] - floor["usedAfter"]
    cap = max(1, round((floor["usedAfter"] + scale * span) / trigger))
    target = None if target is None else target * trigger
    args = (groups, MUTABLE, extras, cap, trigger, target, keep_turns, keep_last, exclude)
    assert _native.attention_plan(*args, *sticky) == oracle.plan(*args, *sticky)


@settings(max_examples=200, deadline=None)
@given(message())
def test_message_tokens_match_estimator(msg: dict[str, Any]) -> None:
    assert _native.attention_message_tokens(msg) == oracle.message_tokens(msg)


@settings(max_examples=200, deadline=None)
@given(json_value)
def test_json_size_matches(value: Any) -> None:
    assert _native.attention_json_size(value) == oracle.json_size(value)


def test_tokens_agree_with_public_estimator() -> None:
    msg = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "text": "abcde"},
            {"type": "text", "text": "é" * 9},
            {"type": "image", "url": "u"},
            {"type": "tool_call", "id": "c", "name": "read", "arguments": {"p": "x"}},
            {"type": "tool_result", "toolCallId": "c", "name": "read", "result": [1, 2]},
        ],
    }
    assert _native.attention_message_tokens(msg) == _native.estimate_message_tokens(msg)


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        json_leaf
        | st.text(max_size=80)  # lone surrogates included: UTF-8 only via surrogatepass
        | st.builds(_Str, text)
        | st.integers(-(2**64), 2**64),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(text, inner, max_size=4)
            | st.dictionaries(text, inner, max_size=2).map(_Dict)
        ),
        max_leaves=16,
    )
)
def test_json_size_fast_and_generic_paths_agree(value: Any) -> None:
    # Exact built-ins take the native fast path; subclasses, ints past 64
    # bits and lone surrogates make it hand the value to the generic walk.
    assert _native.attention_json_size(value) == oracle.json_size(value)


def test_json_size_errors_name_the_path() -> None:
    deep: Any = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValueError, match="MAX_DEPTH"):
        _native.attention_json_size({"a": deep})
    with pytest.raises(TypeError, match=r"keys must be str, not int at \$\.x"):
        _native.attention_json_size({"x": {1: 2}})
    with pytest.raises(TypeError, match=r"not JSON serializable at \$\[1\]"):
        _native.attention_json_size(["ok", object()])
    with pytest.raises(ValueError, match="Out of range float"):
        _native.attention_json_size({"f": float("nan")})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(message(), min_size=1, max_size=10),
    cuts=st.lists(st.integers(0, 10), min_size=1, max_size=4),
    scale=st.floats(0.3, 1.3),
    sticky_i=st.lists(ids, max_size=2),
    replace=st.booleans(),
)
def test_cached_plan_matches_uncached_plan(
    history: list[Any], cuts: list[int], scale: float, sticky_i: list[str], replace: bool
) -> None:
    # A session's turns: the history grows (or a row is replaced), the cache
    # carries rows over, and every plan must equal a from-scratch plan.
    cache = _native.AttentionMeasureCache()
    full = oracle.plan([[], [], history, [], [], []], MUTABLE, [[], [], []], 1, 0.5, None, 1, 1, [])
    cap = max(1, round(full["used"] * scale / 0.75))
    sticky = (None, dict.fromkeys(sticky_i) or None)
    for cut in sorted(cuts):
        rows = list(history[: max(1, cut)])
        if replace and len(rows) > 1:
            rows[0] = dict(rows[0])  # same content, new object: measured again
        args = ([[], [], rows, [], [], []], MUTABLE, [[], [], []], cap, 0.75, None, 1, 1, [])
        cached = _native.attention_plan(*args, *sticky, None, cache)
        assert cached == _native.attention_plan(*args, *sticky)
