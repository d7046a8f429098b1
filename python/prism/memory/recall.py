"""Exact-id recall: the evidence behind one memory, from the supplied branch.

No search: an id that is not 12 lowercase hex characters fails before any
entry is looked at, and an unknown id answers ``found: False``. Only the
entries supplied (the current branch) are read, so a memory or source entry
from another branch is never returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.compaction.observational_memory.ids import require_memory_id
from prism.compaction.observational_memory.ledger import fold_observational_memory_ledger
from prism.compaction.observational_memory.projection import select_branch
from prism.compaction.observational_memory.records import Observation, Reflection
from prism.security.redaction import SecretRedactor, require_redactor

MemoryKind = Literal["observation", "reflection"]


@dataclass(frozen=True, slots=True)
class MemoryRecall:
    """The answer for one id. ``supporting_observations`` are the observations
    a reflection consolidates (empty for an observation); ``source_entries``
    the branch entries they cite, in branch order; ``missing_source_ids``
    cited ids not on the supplied branch; ``missing_observation_ids``
    observations a reflection names that are not recorded on it."""

    id: str
    found: bool
    kind: MemoryKind | None = None
    memory: Observation | Reflection | None = None
    dropped: bool = False
    supporting_observations: list[Observation] = field(default_factory=list)
    source_entries: list[dict[str, Any]] = field(default_factory=list)
    missing_source_ids: list[str] = field(default_factory=list)
    missing_observation_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "found": self.found}
        if not self.found:
            return out
        out.update(
            {
                "dropped": self.dropped,
                "memory": self.memory,
                "supportingObservations": self.supporting_observations,
                "sourceEntries": self.source_entries,
                "missingSourceIds": self.missing_source_ids,
                "missingObservationIds": self.missing_observation_ids,
            }
        )
        return out

    def to_text(self) -> str:
        """A short plain-text rendering for a model or a terminal."""
        if not self.found or self.memory is None:
            return f"No memory {self.id} on this branch."
        state = " (dropped)" if self.dropped else ""
        lines = [f"{self.kind} {self.id}{state}: {self.memory['content']}"]
        for observation in self.supporting_observations:
            lines.append(f"supporting observation {observation['id']}: {observation['content']}")
        for entry in self.source_entries:
            lines.append(f"source {entry.get('id')}: {_entry_text(entry)}")
        if self.missing_source_ids:
            lines.append("sources not on this branch: " + ", ".join(self.missing_source_ids))
        if self.missing_observation_ids:
            lines.append("observations not recorded: " + ", ".join(self.missing_observation_ids))
        return "\n".join(lines)


def _entry_text(entry: Mapping[str, Any]) -> str:
    kind = entry.get("kind")
    if kind == "message":
        message = entry.get("message") or {}
        parts: list[str] = []
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_call":
                parts.append(f"[tool call {block.get('name')}]")
            elif block.get("type") == "tool_result":
                parts.append(f"[tool result {block.get('name')}]")
        return f"{message.get('role', '?')}: {' '.join(p for p in parts if p)}"
    if kind in ("summary", "compaction"):
        return f"{kind}: {entry.get('summary', '')}"
    return str(kind)


def recall_observational_memory(
    entries: Sequence[Mapping[str, Any]],
    memory_id: str,
    *,
    redactor: SecretRedactor,
    leaf_id: str | None = None,
) -> MemoryRecall:
    """Recover the evidence for ``memory_id`` from ``entries`` (the current
    branch, root first; with ``leaf_id`` the branch ending there is cut out
    first). Raises ``InvalidMemoryIdError`` for a malformed id before reading
    any entry. The result is redacted with ``secrets``."""
    require_memory_id(memory_id, "recall id")
    redactor = require_redactor(redactor, owner="recall_observational_memory")
    branch = select_branch(entries, leaf_id)
    ledger = fold_observational_memory_ledger(branch)
    observation = ledger.observations.get(memory_id)
    reflection = ledger.reflections.get(memory_id) if observation is None else None
    if observation is None and reflection is None:
        return MemoryRecall(id=memory_id, found=False)
    supporting: list[Observation] = []
    missing_observations: list[str] = []
    if reflection is not None:
        for key in reflection["observationIds"]:
            found = ledger.observations.get(key)
            if found is None:
                missing_observations.append(key)
            else:
                supporting.append(found)
        cited = [s for o in supporting for s in o["sourceEntryIds"]]
    else:
        assert observation is not None
        cited = list(observation["sourceEntryIds"])
    wanted = dict.fromkeys(cited)
    sources = [dict(e) for e in branch if e.get("id") in wanted]
    present = {e["id"] for e in sources}
    recall = MemoryRecall(
        id=memory_id,
        found=True,
        kind="observation" if observation is not None else "reflection",
        memory=observation if observation is not None else reflection,
        dropped=memory_id in ledger.dropped,
        supporting_observations=supporting,
        source_entries=sources,
        missing_source_ids=[key for key in wanted if key not in present],
        missing_observation_ids=missing_observations,
    )
    if not len(redactor):
        return recall
    return MemoryRecall(
        id=recall.id,
        found=True,
        kind=recall.kind,
        memory=redactor.redact_value(recall.memory),
        dropped=recall.dropped,
        supporting_observations=redactor.redact_value(recall.supporting_observations),
        source_entries=redactor.redact_value(recall.source_entries),
        missing_source_ids=redactor.redact_value(recall.missing_source_ids),
        missing_observation_ids=recall.missing_observation_ids,
    )
