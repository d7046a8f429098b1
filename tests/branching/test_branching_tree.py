from __future__ import annotations

from typing import Any

import pytest

from prism.branching import (
    branch_entries,
    children_of,
    labels,
    list_leaves,
    rebuild_session_context,
)
from prism.contracts import SessionEntry
from prism.errors import StoreError, UnknownNameError


def msg(id: str, parent_id: str | None, role: str = "user", text: str = "") -> Any:
    text = text or id
    return {
        "id": id,
        "sessionId": "s",
        "parentId": parent_id,
        "kind": "message",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }


def summary(id: str, parent_id: str | None, text: str) -> Any:
    return {"id": id, "sessionId": "s", "parentId": parent_id, "kind": "summary", "summary": text}


def model(id: str, parent_id: str | None, name: str) -> Any:
    return {
        "id": id,
        "sessionId": "s",
        "parentId": parent_id,
        "kind": "model_change",
        "model": {"provider": "mock", "model": name},
    }


def label(id: str, parent_id: str | None, text: str, target: str | None = None) -> Any:
    entry = {"id": id, "sessionId": "s", "parentId": parent_id, "kind": "label", "label": text}
    if target is not None:
        entry["targetId"] = target
    return entry


def compaction(
    id: str, parent_id: str | None, text: str, keep: list[str], through: str | None
) -> Any:
    return {
        "id": id,
        "sessionId": "s",
        "parentId": parent_id,
        "kind": "compaction",
        "summary": text,
        "data": {
            "throughEntryId": through,
            "keepEntryIds": keep,
            "strategy": "default-compaction",
            "trigger": "manual",
        },
    }


def texts(messages: list[Any]) -> list[str]:
    return [m["content"][0]["text"] for m in messages]


def ids(entries: list[SessionEntry]) -> list[str]:
    return [e["id"] for e in entries]


# a <- b <- c       (main line)
#       \- d <- e   (fork at b)
TREE = [
    msg("a", None),
    msg("b", "a", "assistant"),
    msg("c", "b"),
    msg("d", "b"),
    msg("e", "d", "assistant"),
]


def test_branch_is_root_to_leaf_path() -> None:
    assert ids(branch_entries(TREE, "c")) == ["a", "b", "c"]
    assert ids(branch_entries(TREE, "e")) == ["a", "b", "d", "e"]
    assert branch_entries(TREE, None) == []


def test_unknown_leaf_is_refused_with_its_id() -> None:
    with pytest.raises(UnknownNameError, match="unknown session entry id 'zz'"):
        branch_entries(TREE, "zz")


def test_parent_loop_is_reported_not_spun_on() -> None:
    loop = [msg("x", "y"), msg("y", "x")]
    with pytest.raises(StoreError, match="cycle"):
        branch_entries(loop, "x")


def test_missing_parent_ends_the_walk() -> None:
    assert ids(branch_entries([msg("b", "gone"), msg("c", "b")], "c")) == ["b", "c"]


def test_leaves_and_children_in_append_order() -> None:
    assert ids(list_leaves(TREE)) == ["c", "e"]
    assert ids(children_of(TREE, "b")) == ["c", "d"]
    assert ids(children_of(TREE, None)) == ["a"]
    assert list_leaves([]) == []


def test_labels_target_or_parent_last_wins() -> None:
    entries = [
        *TREE,
        label("l1", "c", "first", target="b"),
        label("l2", "l1", "second", target="b"),
        label("l3", "e", "tip"),
    ]
    assert labels(entries) == {"b": "second", "e": "tip"}


def test_default_leaf_is_last_appended_entry() -> None:
    ctx = rebuild_session_context(TREE)
    assert ctx.leaf_id == "e"
    assert texts(ctx.messages) == ["a", "b", "d", "e"]
    assert ctx.message_entry_ids == ["a", "b", "d", "e"]


def test_explicit_leaf_selects_other_branch() -> None:
    ctx = rebuild_session_context(TREE, "c")
    assert ids(ctx.entries) == ["a", "b", "c"]
    assert texts(ctx.messages) == ["a", "b", "c"]


def test_empty_session_context() -> None:
    ctx = rebuild_session_context([])
    assert (ctx.entries, ctx.messages, ctx.summaries, ctx.model, ctx.leaf_id) == (
        [],
        [],
        [],
        None,
        None,
    )


def test_compaction_boundary_keeps_listed_and_later_messages() -> None:
    entries = [
        msg("a", None),
        msg("b", "a"),
        summary("s0", "b", "old note"),
        msg("c", "s0"),
        msg("d", "c"),
        compaction("k", "d", "SUM", keep=["c", "d"], through="b"),
        summary("s1", "k", "new note"),
        msg("e", "s1"),
    ]
    ctx = rebuild_session_context(entries)
    assert ids(ctx.entries) == ["a", "b", "s0", "c", "d", "k", "s1", "e"]  # raw branch intact
    assert texts(ctx.messages) == ["c", "d", "e"]
    assert ctx.summaries == ["SUM", "new note"]
    assert ctx.message_entry_ids == ["c", "d", "e"]


def test_latest_compaction_wins() -> None:
    entries = [
        msg("a", None),
        compaction("k1", "a", "ONE", keep=["a"], through=None),
        msg("b", "k1"),
        compaction("k2", "b", "TWO", keep=[], through="b"),
        msg("c", "k2"),
    ]
    ctx = rebuild_session_context(entries)
    assert texts(ctx.messages) == ["c"]
    assert ctx.summaries == ["TWO"]


def test_compaction_on_other_branch_is_ignored() -> None:
    entries = [
        msg("a", None),
        msg("b", "a"),
        compaction("k", "b", "SUM", keep=[], through="b"),
        msg("c", "a"),
    ]
    ctx = rebuild_session_context(entries, "c")
    assert texts(ctx.messages) == ["a", "c"]
    assert ctx.summaries == []


def test_keep_ids_off_branch_are_ignored() -> None:
    entries = [
        msg("a", None),
        msg("x", None),
        compaction("k", "a", "S", keep=["x", "a"], through=None),
    ]
    assert texts(rebuild_session_context(entries).messages) == ["a"]


def test_model_is_latest_change_on_branch_even_before_compaction() -> None:
    entries = [
        model("m1", None, "one"),
        msg("a", "m1"),
        model("m2", "a", "two"),
        compaction("k", "m2", "S", keep=[], through="m2"),
        msg("b", "k"),
        model("m3", "a", "other"),
    ]
    assert rebuild_session_context(entries, "b").model == {"provider": "mock", "model": "two"}
    assert rebuild_session_context(entries, "m3").model == {"provider": "mock", "model": "other"}
    assert rebuild_session_context([msg("a", None)]).model is None


def test_inputs_are_not_mutated() -> None:
    entries = [msg("a", None), compaction("k", "a", "S", keep=["a"], through=None), msg("b", "k")]
    before = repr(entries)
    rebuild_session_context(entries)
    list_leaves(entries)
    assert repr(entries) == before


def test_copy_branch_remaps_every_reference() -> None:
    from itertools import count

    from prism.branching import copy_branch

    path = [
        msg("a", None),
        msg("b", "a"),
        compaction("k", "b", "S", keep=["b"], through="a"),
        label("l", "k", "tag", target="b"),
    ]
    numbers = count(1)
    copies = copy_branch(path, "other", lambda: f"n{next(numbers)}")
    assert ids(copies) == ["n1", "n2", "n3", "n4"]
    assert [c["parentId"] for c in copies] == [None, "n1", "n2", "n3"]
    assert all(c["sessionId"] == "other" for c in copies)
    assert copies[2]["data"]["keepEntryIds"] == ["n2"]
    assert copies[2]["data"]["throughEntryId"] == "n1"
    assert copies[3]["targetId"] == "n2"
    assert path[2]["data"]["keepEntryIds"] == ["b"]  # originals untouched
    assert texts(rebuild_session_context(copies).messages) == ["b"]
