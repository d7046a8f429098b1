"""Random trees: branches are parent chains, leaves are exactly the childless
entries, and the context of a compaction-free branch is its messages."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from prism.branching import branch_entries, list_leaves, rebuild_session_context


def tree(parents: list[int]) -> list[Any]:
    """Entry i's parent is entry parents[i] (an index < i), or none for -1."""
    entries: list[Any] = []
    for index, parent in enumerate(parents):
        kind = "summary" if index % 5 == 4 else "message"
        entry: dict[str, Any] = {
            "id": f"e{index}",
            "sessionId": "s",
            "parentId": None if parent < 0 else f"e{parent}",
            "kind": kind,
        }
        if kind == "message":
            entry["message"] = {"role": "user", "content": [{"type": "text", "text": f"m{index}"}]}
        else:
            entry["summary"] = f"s{index}"
        entries.append(entry)
    return entries


parent_lists = st.lists(st.integers(min_value=-1, max_value=10_000), min_size=1, max_size=40).map(
    lambda raw: [-1 if i == 0 or r < 0 else r % i for i, r in enumerate(raw)]
)


@given(parent_lists, st.data())
def test_branch_and_context_invariants(parents: list[int], data: st.DataObject) -> None:
    entries = tree(parents)
    leaf = data.draw(st.sampled_from(entries))["id"]
    path = branch_entries(entries, leaf)
    assert path[0]["parentId"] is None and path[-1]["id"] == leaf
    for parent, child in itertools.pairwise(path):
        assert child["parentId"] == parent["id"]
    context = rebuild_session_context(entries, leaf)
    assert context.entries == path
    assert context.message_entry_ids == [e["id"] for e in path if e["kind"] == "message"]
    assert context.summaries == [e["summary"] for e in path if e["kind"] == "summary"]
    parent_ids = {e["parentId"] for e in entries}
    assert [e["id"] for e in list_leaves(entries)] == [
        e["id"] for e in entries if e["id"] not in parent_ids
    ]
