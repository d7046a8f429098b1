"""Opt-in persistence of the sticky frontier in the session store.

The reference keeps the frontier in its durable checkpoints, and so does a
Prism durable run with ``persist_session_state=True``. Otherwise, with
``AttentionCompilerOptions(persist_frontier=True)`` the session appends a ``custom`` entry (``customType`` ``prism.attention_frontier``,
``data`` = ``frontier.to_json()``) in the same batch as the turn whose
request changed the frontier, and a session read back from its store
restores the newest such entry on its branch. Custom entries are not
messages (``rebuild_session_context`` skips them) and compaction never
summarizes them, so the checkpoint never reaches a provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.attention.frontier import AttentionStickyFrontier

FRONTIER_CUSTOM_TYPE = "prism.attention_frontier"
# A durable run's checkpoint (prism.runtime.durable) carries the frontier in
# ``data.sessionState.attentionSticky`` and replaces the entry above; both
# are read, newest first.
CHECKPOINT_CUSTOM_TYPE = "prism.checkpoint"


def _is_frontier_data(data: object) -> bool:
    return isinstance(data, Mapping) and any(
        isinstance(data.get(name), list) for name in ("thinking", "toolCallIds")
    )


def restore_attention_frontier(
    entries: Sequence[Mapping[str, Any]],
) -> AttentionStickyFrontier | None:
    """The frontier of the newest well-formed checkpoint in ``entries`` (a
    branch, root first), or None when there is none.

    Never raises: a checkpoint whose ``data`` is not a frontier object is
    skipped for the next older one, and malformed keys inside a checkpoint
    are dropped one by one (``AttentionStickyFrontier.from_json``).
    """
    for entry in reversed(entries):
        if not isinstance(entry, Mapping):
            continue
        if entry.get("kind") != "custom":
            continue
        data = entry.get("data")
        if entry.get("customType") == CHECKPOINT_CUSTOM_TYPE:
            state = data.get("sessionState") if isinstance(data, Mapping) else None
            data = state.get("attentionSticky") if isinstance(state, Mapping) else None
        elif entry.get("customType") != FRONTIER_CUSTOM_TYPE:
            continue
        if not _is_frontier_data(data):
            continue
        assert isinstance(data, Mapping)
        frontier = AttentionStickyFrontier.from_json(data)
        frontier.mark_persisted(frontier.to_json())
        return frontier
    return None


def frontier_checkpoint_entry(
    session_id: str, entry_id: str, data: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``custom`` session entry holding ``data`` (``parentId`` is chained
    at append time)."""
    return {
        "id": entry_id,
        "sessionId": session_id,
        "parentId": None,
        "kind": "custom",
        "customType": FRONTIER_CUSTOM_TYPE,
        "data": dict(data),
    }
