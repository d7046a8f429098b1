"""Cut points over generated branches: a tool result never loses its call,
the kept suffix honours the budget, and split turns are found."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.compaction.llm_support import Branch

from prism import _native
from prism.compaction.llm import find_llm_compaction_cut_point, prepare_llm_compaction

# One turn: a user message, then assistant steps, each with 0-3 tool calls
# whose results follow; sizes vary so budgets land anywhere.
size = st.integers(min_value=0, max_value=3000)
step = st.tuples(size, st.lists(size, max_size=3))
turn = st.tuples(size, st.lists(step, min_size=1, max_size=4))


def build(turns: list[Any], extras: bool) -> list[dict[str, Any]]:
    b = Branch()
    calls = 0
    for user_size, steps in turns:
        b.user("u" * user_size)
        if extras:
            b._add({"kind": "label", "label": "checkpoint"})
        for text_size, results in steps:
            ids = [f"c{calls + i}" for i in range(len(results))]
            calls += len(results)
            b.assistant("a" * text_size, *[(i, "read", {"path": f"{i}.py"}) for i in ids])
            for call_id, result_size in zip(ids, results, strict=True):
                b.tool(call_id, "read", "r" * result_size)
    return b.entries


def call_ids(entry: dict[str, Any]) -> set[str]:
    if entry["kind"] != "message":
        return set()
    return {b["id"] for b in entry["message"]["content"] if b["type"] == "tool_call"}


def result_ids(entry: dict[str, Any]) -> set[str]:
    if entry["kind"] != "message":
        return set()
    return {b["toolCallId"] for b in entry["message"]["content"] if b["type"] == "tool_result"}


def is_cut_point(entry: dict[str, Any]) -> bool:
    return entry["kind"] == "message" and entry["message"]["role"] in ("user", "assistant")


def suffix_tokens(entries: list[dict[str, Any]], start: int) -> int:
    return sum(_native.estimate_entry_tokens(e) for e in entries[start:])


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(turn, min_size=1, max_size=8),
    budget=st.integers(min_value=1, max_value=6000),
    extras=st.booleans(),
)
def test_cut_points_keep_calls_with_results_and_respect_the_budget(
    turns: list[Any], budget: int, extras: bool
) -> None:
    entries = build(turns, extras)
    cut = find_llm_compaction_cut_point(entries, keep_recent_tokens=budget)
    first = cut.first_kept_index
    kept, dropped = entries[first:], entries[:first]
    total = suffix_tokens(entries, 0)

    # Never orphan a tool result: every kept result's call is kept too.
    kept_calls = set().union(*map(call_ids, kept)) if kept else set()
    for entry in kept:
        assert result_ids(entry) <= kept_calls
    # ...and no summarized call lost its result to the kept side.
    dropped_calls = set().union(*map(call_ids, dropped)) if dropped else set()
    kept_results = set().union(*map(result_ids, kept)) if kept else set()
    assert not dropped_calls & kept_results
    if kept:
        assert kept[0]["kind"] == "message" and kept[0]["message"]["role"] in ("user", "assistant")

    assert cut.kept_tokens == suffix_tokens(entries, first)
    if total < budget:
        assert first == 0  # everything fits: nothing is cut
    elif first > 0:
        # Budget respected: the kept suffix reaches the budget, and starting at
        # any later cut point would fall short of it (no more is kept than needed),
        # unless the cut had to move back to keep a call with its results.
        later = [i for i in range(first + 1, len(entries)) if is_cut_point(entries[i])]
        if later:
            assert suffix_tokens(entries, later[0]) < budget
        if cut.kept_tokens < budget:
            # The budget was crossed on entries that cannot start kept history
            # (tool results, labels): everything after the previous cut point
            # still reaches the budget, so the cut moved forward only past those.
            previous = [i for i in range(first) if is_cut_point(entries[i])]
            start = previous[-1] + 1 if previous else 0
            assert suffix_tokens(entries, start) >= budget
            assert all(not is_cut_point(e) for e in entries[start:first])

    # Split turns: the kept part starts mid-turn and the prefix starts at a user message.
    if cut.is_split_turn:
        assert kept[0]["message"]["role"] == "assistant"
        start = entries[cut.turn_start_index]
        assert start["kind"] == "message" and start["message"]["role"] == "user"
        between = entries[cut.turn_start_index + 1 : first]
        assert all(e["kind"] != "message" or e["message"]["role"] != "user" for e in between)
    else:
        assert cut.turn_start_index == -1
        if 0 < first < len(entries):
            assert kept[0]["message"]["role"] == "user" or not any(
                e["kind"] == "message" and e["message"]["role"] == "user" for e in dropped
            )


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(turn, min_size=1, max_size=6), budget=st.integers(1, 5000))
def test_preparation_partitions_the_branch(turns: list[Any], budget: int) -> None:
    entries = build(turns, extras=False)
    prep = prepare_llm_compaction(entries, keep_recent_tokens=budget)
    parts = prep.history_entries + prep.turn_prefix_entries + prep.kept_entries
    assert [e["id"] for e in parts] == [e["id"] for e in entries]
    assert prep.keep_entry_ids == [e["id"] for e in prep.kept_entries]
    assert prep.estimated_tokens_before == suffix_tokens(entries, 0)
    assert bool(prep.turn_prefix_entries) == prep.is_split_turn


def test_a_huge_last_tool_result_keeps_its_call() -> None:
    b = Branch()
    b.user("q")
    b.assistant("", ("c1", "read", {"path": "big.log"}))
    b.tool("c1", "read", "x" * 100_000)
    cut = find_llm_compaction_cut_point(b.entries, keep_recent_tokens=100)
    assert cut.first_kept_index == 1 and cut.is_split_turn and cut.turn_start_index == 0


def test_empty_branch() -> None:
    cut = find_llm_compaction_cut_point([], keep_recent_tokens=10)
    assert (cut.first_kept_index, cut.is_split_turn, cut.kept_tokens) == (0, False, 0)
