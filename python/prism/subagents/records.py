"""What a delegation leaves in its child's session, and reading it back.

The child's session (on the parent's store) starts with a ``prism.subagent``
link entry (parent session, run and tool call) and ends with a
``prism.subagent.outcome`` entry once the delegation is terminal. Both are
``custom`` entries: they never reach a provider. A re-executed delegation
(its parent resumed after a crash) reads them to return a finished child's
outcome instead of running it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prism.contracts import SessionEntry

__all__ = [
    "LINK_TYPE",
    "OUTCOME_TYPE",
    "ChildRecord",
    "delegation_id_for",
    "read_child_record",
]

LINK_TYPE = "prism.subagent"
OUTCOME_TYPE = "prism.subagent.outcome"
_CHECKPOINT_TYPE = "prism.checkpoint"


def delegation_id_for(parent_session_id: str, run_id: str | None, tool_call_id: str) -> str:
    """A pure function of the parent's call: the same delegation in any
    process, so a resumed parent finds its child again."""
    raw = f"{parent_session_id}\0{run_id or ''}\0{tool_call_id}".encode()
    return f"delegation_{hashlib.sha256(raw).hexdigest()[:20]}"


@dataclass(frozen=True, slots=True)
class ChildRecord:
    """What the store says about one child session."""

    exists: bool
    link: Mapping[str, Any] | None
    outcome: Mapping[str, Any] | None
    ended: Mapping[str, Any] | None
    """The newest checkpoint's data when its phase is ``end``."""
    last_text: str


def _custom(entry: SessionEntry, kind: str) -> Mapping[str, Any] | None:
    if entry.get("kind") != "custom" or entry.get("customType") != kind:
        return None
    data = entry.get("data")
    return data if isinstance(data, Mapping) else None


def _assistant_text(entry: SessionEntry) -> str | None:
    message = entry.get("message") if entry.get("kind") == "message" else None
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    return "".join(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def read_child_record(entries: Sequence[SessionEntry]) -> ChildRecord:
    link: Mapping[str, Any] | None = None
    outcome: Mapping[str, Any] | None = None
    checkpoint: Mapping[str, Any] | None = None
    last_text = ""
    for entry in entries:
        link = _custom(entry, LINK_TYPE) or link
        outcome = _custom(entry, OUTCOME_TYPE) or outcome
        checkpoint = _custom(entry, _CHECKPOINT_TYPE) or checkpoint
        text = _assistant_text(entry)
        if text is not None:
            last_text = text
    ended = checkpoint if checkpoint is not None and checkpoint.get("phase") == "end" else None
    return ChildRecord(bool(entries), link, outcome, ended, last_text)
