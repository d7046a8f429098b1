"""Session branches: entries form a tree by ``parentId``.

Every function here is pure: it reads a list of entries (append order, as a
store's ``list`` returns them) and never mutates it. A branch is the path
from the root to one leaf; the provider-facing view of a branch is built by
:func:`rebuild_session_context`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.contracts import Message, ModelConfig, SessionEntry
from prism.errors import StoreError, UnknownNameError

__all__ = [
    "SessionContext",
    "branch_entries",
    "children_of",
    "copy_branch",
    "labels",
    "latest_compaction_index",
    "list_leaves",
    "rebuild_session_context",
]


@dataclass(frozen=True, slots=True)
class SessionContext:
    """The branch ending at ``leaf_id`` as the runtime feeds it to a provider.

    ``entries`` is the raw branch (root first, compactions included);
    ``messages`` holds the messages after the latest compaction plus the
    ones it kept (``keepEntryIds``), and ``message_entry_ids`` names the
    entry each message came from (same order), so callers can cache per-row
    work by entry id. ``summaries`` is the compaction summary followed by the
    summary entries appended after it. ``model`` is the model of the latest
    ``model_change`` on the branch, if any.
    """

    entries: list[SessionEntry]
    messages: list[Message]
    summaries: list[str]
    model: ModelConfig | None
    leaf_id: str | None
    message_entry_ids: list[str] = field(default_factory=list)


def _index(entries: Iterable[SessionEntry]) -> dict[str, SessionEntry]:
    return {entry["id"]: entry for entry in entries}


def branch_entries(entries: Sequence[SessionEntry], leaf_id: str | None) -> list[SessionEntry]:
    """Root-to-leaf path ending at ``leaf_id`` (empty for ``None``).

    A ``parentId`` naming an entry that is not in ``entries`` ends the walk
    there, so a partial listing yields the part of the branch it holds.
    Raises ``UnknownNameError`` for an unknown leaf and ``StoreError`` when
    parent links loop.
    """
    if leaf_id is None:
        return []
    by_id = _index(entries)
    if leaf_id not in by_id:
        raise UnknownNameError(f"unknown session entry id {leaf_id!r}")
    path: list[SessionEntry] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while current is not None and current in by_id:
        if current in seen:
            raise StoreError(f"session entries form a cycle at entry {current!r}")
        seen.add(current)
        entry = by_id[current]
        path.append(entry)
        current = entry["parentId"]
    path.reverse()
    return path


def children_of(entries: Sequence[SessionEntry], entry_id: str | None) -> list[SessionEntry]:
    """Direct children of ``entry_id`` in append order (``None``: the roots)."""
    return [entry for entry in entries if entry["parentId"] == entry_id]


def list_leaves(entries: Sequence[SessionEntry]) -> list[SessionEntry]:
    """Entries nobody points at as parent, in append order."""
    parents = {entry["parentId"] for entry in entries}
    return [entry for entry in entries if entry["id"] not in parents]


def labels(entries: Sequence[SessionEntry]) -> dict[str, str]:
    """Map of entry id -> label. A label entry names its target with
    ``targetId``, or labels its parent when it has none; the label appended
    last wins for a target."""
    result: dict[str, str] = {}
    for entry in entries:
        if entry["kind"] != "label":
            continue
        target = entry.get("targetId") or entry["parentId"]
        if target is not None:
            result[target] = entry["label"]
    return result


def latest_compaction_index(branch: Sequence[SessionEntry]) -> int:
    """Index of the last compaction entry in ``branch``, or -1."""
    for index in range(len(branch) - 1, -1, -1):
        if branch[index]["kind"] == "compaction":
            return index
    return -1


def rebuild_session_context(
    entries: Sequence[SessionEntry], leaf_id: str | None = None
) -> SessionContext:
    """Provider-facing context of the branch ending at ``leaf_id``.

    The default leaf is the entry appended last. Raw entries are never
    dropped from ``entries``; only ``messages``/``summaries`` honour the
    latest compaction boundary.
    """
    if leaf_id is None:
        if not entries:
            return SessionContext([], [], [], None, None, [])
        leaf_id = entries[-1]["id"]
    branch = branch_entries(entries, leaf_id)
    boundary = latest_compaction_index(branch)

    model: ModelConfig | None = None
    for entry in branch:
        if entry["kind"] == "model_change":
            model = entry["model"]

    messages: list[Message] = []
    message_ids: list[str] = []
    summaries: list[str] = []
    if boundary >= 0:
        compaction = branch[boundary]
        assert compaction["kind"] == "compaction"
        keep = set(compaction["data"].get("keepEntryIds") or ())
        for entry in branch[:boundary]:
            if entry["kind"] == "message" and entry["id"] in keep:
                messages.append(entry["message"])
                message_ids.append(entry["id"])
        summaries.append(compaction["summary"])
    for entry in branch[boundary + 1 :]:
        if entry["kind"] == "message":
            messages.append(entry["message"])
            message_ids.append(entry["id"])
        elif entry["kind"] == "summary":
            summaries.append(entry["summary"])
    return SessionContext(branch, messages, summaries, model, leaf_id, message_ids)


def copy_branch(
    path: Sequence[SessionEntry], session_id: str, new_id: Callable[[], str]
) -> list[SessionEntry]:
    """Copies of ``path`` (a root-first branch) for session ``session_id`` with
    fresh ids from ``new_id``. References between entries — ``parentId``, a
    label's ``targetId``, a compaction's ``keepEntryIds``/``throughEntryId`` —
    are remapped to the copies; references outside ``path`` are kept as they
    are (a parent outside the path becomes ``None``)."""
    mapping = {entry["id"]: new_id() for entry in path}
    copies: list[SessionEntry] = []
    for entry in path:
        copy: dict[str, Any] = dict(entry)
        copy["id"] = mapping[entry["id"]]
        copy["sessionId"] = session_id
        parent = entry["parentId"]
        copy["parentId"] = mapping.get(parent) if parent is not None else None
        if entry["kind"] == "label":
            target = entry.get("targetId")
            if target is not None and target in mapping:
                copy["targetId"] = mapping[target]
        if entry["kind"] == "compaction":
            data: dict[str, Any] = dict(entry["data"])
            keep: list[str] = list(data.get("keepEntryIds") or ())
            data["keepEntryIds"] = [mapping.get(i, i) for i in keep]
            through = data.get("throughEntryId")
            if isinstance(through, str):
                data["throughEntryId"] = mapping.get(through, through)
            copy["data"] = data
        copies.append(copy)  # type: ignore[arg-type]
    return copies
