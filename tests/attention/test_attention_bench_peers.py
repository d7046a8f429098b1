"""The benchmark's peer strategies and its table: the ToolOutputTrimmer
emulation against the real class, the Anthropic context-editing emulation's
documented defaults, and signs that read right in a 100-column table."""

from __future__ import annotations

from typing import Any

import pytest
from benches.attention.peers import (
    ANTHROPIC_PLACEHOLDER,
    anthropic_edited,
    emulated_trim,
    real_trimmer,
    to_responses_items,
    trimmed_request,
)
from benches.attention.report import change, table

from prism._bench.attention.fixtures import coding_turns
from prism._bench.attention.scenario import VariantResult


def session_request(runs: int, *, big: int = 0) -> dict[str, Any]:
    """A compiler-off request after ``runs`` fixture runs (ends with a tool result)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": "s"}]}
    ]
    for turn in coding_turns(7, runs):
        assert turn.call is not None
        messages.append({"role": "user", "content": [{"type": "text", "text": turn.user}]})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": turn.thinking},
                    {"type": "text", "text": turn.text},
                    turn.call,
                ],
            }
        )
        result = "z" * big if big else turn.result
        block = {
            "type": "tool_result",
            "toolCallId": turn.call["id"],
            "name": turn.call["name"],
            "result": result,
        }
        messages.append({"role": "tool", "content": [block]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": turn.answer}]})
    return {"tools": [], "messages": messages[:-1]}


def results_of(request: dict[str, Any]) -> list[Any]:
    return [
        b["result"]
        for m in request["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def test_trim_emulation_matches_the_real_tool_output_trimmer() -> None:
    real = real_trimmer()
    if real is None:
        pytest.skip("openai-agents (bench extra) is not installed")
    for runs in (1, 2, 5, 12):
        items, _ = to_responses_items(session_request(runs)["messages"])
        assert emulated_trim(items) == real(items)


def test_trimmer_keeps_the_last_two_user_turns_and_writes_back_previews() -> None:
    request = session_request(6)
    after = trimmed_request(request, emulated_trim)
    before, trimmed = results_of(request), results_of(after)
    # Turns older than the second newest user message are trimmed (results > 500 chars).
    assert all(isinstance(t, str) and t.startswith("[Trimmed: ") for t in trimmed[:4])
    assert trimmed[4:] == before[4:]
    assert request["messages"] is not after["messages"] and results_of(request) == before


def test_anthropic_edit_clears_old_results_over_the_trigger_and_old_thinking_always() -> None:
    small = session_request(6, big=400)  # far under 100k tokens
    edited = anthropic_edited(small)
    assert results_of(edited) == results_of(small)
    thinking = [
        m for m in edited["messages"] if any(b.get("type") == "thinking" for b in m["content"])
    ]
    assert len(thinking) == 1 and thinking[0] is small["messages"][-2]  # the newest turn keeps it
    large = session_request(8, big=60_000)  # 8 x 15k tokens: over the trigger
    cleared = results_of(anthropic_edited(large))
    assert cleared[:5] == [ANTHROPIC_PLACEHOLDER] * 5 and cleared[5:] == ["z" * 60_000] * 3


def test_changes_read_right() -> None:
    assert change(324, 100, "fewer", "more") == "224.0% more"
    assert change(25, 100, "less", "more") == "75.0% less"
    assert change(100, 100, "fewer", "more") == "same"


def test_table_fits_100_columns_without_cutting_numbers() -> None:
    # Widest plausible figures: a 300-request session near a 1M window.
    off = VariantResult("off", kind="baseline")
    off.input_tokens = [999_999] * 300
    off.busts = [False] * 300
    off.cache_read, off.cache_write = [0] * 300, [999_999] * 300
    other = VariantResult("anthropic edit", kind="peer")
    other.input_tokens, other.busts = [1_000] * 300, [True] * 300
    other.cache_read, other.cache_write = [0] * 300, [1_000] * 300
    text = table([off, other], off, other)
    assert max(map(len, text.splitlines())) <= 100
    assert "299,999,700" in text.splitlines()[2] and "99.9% fewer" in text.splitlines()[3]
