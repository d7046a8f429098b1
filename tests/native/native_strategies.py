"""Hypothesis strategies for JSON-shaped Python values and wire shapes."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Default text covers every code point except surrogates: non-ASCII, astral
# and control characters included. Bias toward the characters that escape.
_escapy = st.sampled_from(list('"\\\n\r\t\b\f\x00\x01\x1f\x7f é€𝄞\u2028'))
texts = st.one_of(st.text(), st.text(alphabet=_escapy), st.text(min_size=1, max_size=3))

big_ints = st.one_of(st.integers(), st.integers(min_value=-(2**200), max_value=2**200))


def json_values_with(
    ints: st.SearchStrategy[int], *, tuples: bool = True
) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), ints, st.floats(allow_nan=False, allow_infinity=False), texts
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=5),
            st.dictionaries(texts, children, max_size=5),
            *([st.lists(children, max_size=3).map(tuple)] if tuples else []),
        ),
        max_leaves=30,
    )


json_values = json_values_with(big_ints)


def nest(value: Any, depth: int, *, as_dict: bool = False) -> Any:
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


def messages_with(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    blocks = st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.builds(lambda t: {"type": "thinking", "text": t, "signature": "sig"}, texts),
        st.just({"type": "image", "url": "https://example.invalid/a.png"}),
        st.builds(
            lambda n, a: {"type": "tool_call", "id": "c1", "name": n, "arguments": a},
            texts,
            st.dictionaries(texts, values, max_size=4),
        ),
        st.builds(
            lambda n, r: {"type": "tool_result", "toolCallId": "c1", "name": n, "result": r},
            texts,
            values,
        ),
        st.builds(lambda v: {"type": "custom_block", "value": v}, values),
    )

    return st.builds(
        lambda role, content: {"role": role, "content": content},
        st.sampled_from(["system", "user", "assistant", "tool"]),
        st.lists(blocks, max_size=5),
    )


messages = messages_with(json_values)
