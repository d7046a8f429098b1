"""The session's cached view of its current branch.

Appends extend the cached lists in place, so a turn costs O(new entries)
instead of re-walking the store; only a compaction, a leaf move, a fork or a
session switch rebuilds from entries.
"""

from __future__ import annotations

from collections.abc import Sequence

from prism.attention.calibration_entry import record_of_entry
from prism.branching import rebuild_session_context
from prism.contracts import Message, ModelConfig, SessionEntry

_CHECKPOINT = "prism.checkpoint"  # prism.runtime.durable.CHECKPOINT_CUSTOM_TYPE


class BranchCache:
    __slots__ = (
        "entries",
        "last_calibration",
        "last_checkpoint",
        "leaf_id",
        "message_entry_ids",
        "messages",
        "model",
        "summaries",
    )

    def __init__(
        self, all_entries: Sequence[SessionEntry] = (), leaf_id: str | None = None
    ) -> None:
        self.reset(all_entries, leaf_id)

    def reset(self, all_entries: Sequence[SessionEntry], leaf_id: str | None) -> None:
        context = rebuild_session_context(all_entries, leaf_id)
        self.entries: list[SessionEntry] = context.entries
        self.messages: list[Message] = context.messages
        self.message_entry_ids: list[str] = context.message_entry_ids
        self.summaries: list[str] = context.summaries
        self.model: ModelConfig | None = context.model
        self.leaf_id: str | None = context.leaf_id
        # The newest durable-run checkpoint on the branch: a new run checks
        # in O(1) whether an unfinished durable run must be closed first.
        self.last_checkpoint: SessionEntry | None = None
        # The newest token-calibration record on the branch (an agent with
        # token_calibration= restores from it when a run begins).
        self.last_calibration: SessionEntry | None = None
        for entry in reversed(self.entries):
            if entry["kind"] != "custom":
                continue
            if self.last_checkpoint is None and entry.get("customType") == _CHECKPOINT:
                self.last_checkpoint = entry
            if self.last_calibration is None and record_of_entry(entry) is not None:
                self.last_calibration = entry
            if self.last_checkpoint is not None and self.last_calibration is not None:
                break

    def extend(self, new_entries: Sequence[SessionEntry]) -> None:
        """Record entries just appended as a chain under the current leaf."""
        rebuild = False
        for entry in new_entries:
            self.entries.append(entry)
            if entry["kind"] == "message":
                self.messages.append(entry["message"])
                self.message_entry_ids.append(entry["id"])
            elif entry["kind"] == "summary":
                self.summaries.append(entry["summary"])
            elif entry["kind"] == "model_change":
                self.model = entry["model"]
            elif entry["kind"] == "compaction":
                rebuild = True
            elif entry["kind"] == "custom":
                if entry.get("customType") == _CHECKPOINT:
                    self.last_checkpoint = entry
                if record_of_entry(entry) is not None:
                    self.last_calibration = entry
            self.leaf_id = entry["id"]
        if rebuild:
            # The branch itself is a valid entry list: each parent precedes its child.
            self.reset(self.entries, self.leaf_id)

    @property
    def has_unfinished_run(self) -> bool:
        """Whether the newest checkpoint on the branch is not an ``end``."""
        checkpoint = self.last_checkpoint
        if checkpoint is None:
            return False
        data = checkpoint.get("data")
        return not isinstance(data, dict) or data.get("phase") != "end"

    @property
    def last_kind(self) -> str | None:
        return self.entries[-1]["kind"] if self.entries else None
