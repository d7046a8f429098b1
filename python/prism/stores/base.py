"""The ``SessionStore`` protocol every store implements.

Consistency contract shared by all stores (docs/stores.md has each store's
specifics): an ``append_many`` batch is all-or-nothing; entries come back
from ``list`` in append order; an id is unique within a store and a
duplicate is refused with ``DuplicateEntryError`` before anything is
written; entries are never rewritten or deleted.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from prism.contracts import SessionEntry
from prism.errors import StoreError

_KINDS = frozenset({"message", "summary", "model_change", "custom", "compaction", "label"})


@runtime_checkable
class SessionStore(Protocol):
    async def append(self, entry: SessionEntry) -> None:
        """Persist one entry, refusing a duplicate id."""
        ...

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        """Persist a batch atomically: either every entry lands or none does."""
        ...

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        """Entries of one session in append order."""
        ...

    async def get(self, entry_id: str) -> SessionEntry | None:
        """The entry with this id, or None."""
        ...

    async def list_sessions(self) -> builtins.list[str]:
        """Session ids present in the store, in first-appearance order."""
        ...


def validate_entry_for_append(entry: object) -> SessionEntry:
    """Cheap structural check done before any write, so a bad entry is
    refused with a message naming the field and nothing is half-written.
    Deep per-kind validation is the native parser's job on read."""
    if not isinstance(entry, dict):
        raise StoreError(f"session entry must be a dict, got {type(entry).__name__}")
    for key in ("id", "sessionId"):
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise StoreError(f"session entry field {key!r} must be a non-empty string")
    parent = entry.get("parentId", None)
    if "parentId" not in entry or not (parent is None or isinstance(parent, str)):
        raise StoreError("session entry field 'parentId' must be a string or null")
    kind = entry.get("kind")
    if kind not in _KINDS:
        raise StoreError(f"session entry field 'kind' has unknown value {kind!r}")
    return entry  # type: ignore[return-value]
