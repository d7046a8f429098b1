"""Property checks for templates and tool-result placement."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from prism.assembly import place_tool_results, render_prompt_template, text_message
from prism.contracts import Message

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


@given(st.text().filter(lambda t: "{{" not in t))
def test_text_without_placeholders_is_unchanged(text: str) -> None:
    assert render_prompt_template(text, {}) == text


@given(st.text(), st.dictionaries(NAMES, JSON))
def test_preserve_never_raises_and_is_idempotent_on_missing(template: str, variables: Any) -> None:
    rendered = render_prompt_template(template, {}, missing="preserve")
    assert rendered == template
    render_prompt_template(template, variables, missing="preserve")


@given(st.dictionaries(NAMES, JSON, min_size=1))
def test_every_variable_renders_deterministically(variables: dict[str, Any]) -> None:
    template = " ".join(f"{{{{{name}}}}}" for name in variables)
    assert render_prompt_template(template, variables) == render_prompt_template(
        template, dict(reversed(list(variables.items())))
    )


def _assistant(ids: list[str]) -> Message:
    return {
        "role": "assistant",
        "content": [{"type": "tool_call", "id": i, "name": "t", "arguments": {}} for i in ids],
    }


def _result(call_id: str) -> Message:
    return {
        "role": "tool",
        "content": [{"type": "tool_result", "toolCallId": call_id, "name": "t", "result": 1}],
    }


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=3, unique=True), max_size=5),
    st.lists(st.sampled_from("abcdefghxyz"), max_size=6),
)
def test_placement_keeps_every_message_and_follows_the_caller(
    turns: list[list[str]], answered: list[str]
) -> None:
    messages: list[Message] = []
    for ids in turns:
        messages.append(text_message("user", "q"))
        messages.append(_assistant(ids))
    results = [_result(call_id) for call_id in answered]
    placed = place_tool_results(messages, results)
    assert len(placed) == len(messages) + len(results)
    assert [m for m in placed if m["role"] != "tool"] == messages
    for result in results:
        position = next(i for i, m in enumerate(placed) if m is result)
        call_id = result["content"][0]["toolCallId"]  # type: ignore[typeddict-item]
        callers = [
            i
            for i, m in enumerate(placed)
            if m["role"] == "assistant" and any(b.get("id") == call_id for b in m["content"])
        ]
        if callers:
            # After its (latest) caller, with only tool messages in between.
            caller = callers[-1]
            assert position > caller
            assert all(m["role"] == "tool" for m in placed[caller + 1 : position])
