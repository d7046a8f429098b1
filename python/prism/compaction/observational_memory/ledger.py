"""Folding the memory ledger: one O(n) pass over branch entries.

The ledger is the set of memory records on a branch. Folding reads them in
branch order and keeps, for every memory, the position of the entry that
recorded it, so projections can ask "recorded after the latest fold?"
without a second pass. Malformed records are skipped (their entry ids are
listed in ``invalid_entry_ids``), never raised: a session file written by
another tool must still load.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prism.compaction.observational_memory.ids import HEX_DIGITS as _HEX_DIGITS
from prism.compaction.observational_memory.ids import is_memory_id
from prism.compaction.observational_memory.records import (
    OBSERVATIONS_DROPPED,
    OBSERVATIONS_RECORDED,
    REFLECTIONS_RECORDED,
    FoldedMemory,
    Observation,
    Reflection,
    is_folded_memory,
    parse_observation,
    parse_reflection,
)


@dataclass(frozen=True, slots=True)
class FoldPoint:
    """The latest observational-memory compaction on the branch."""

    entry_id: str
    position: int
    memory: FoldedMemory
    # How many observations / reflections the ledger held once this fold was
    # read: everything recorded later is the tail of the ledger's dicts.
    observation_count: int = 0
    reflection_count: int = 0


@dataclass(slots=True)
class ObservationalMemoryLedger:
    """What :func:`fold_observational_memory_ledger` returns.

    ``observations``/``reflections`` hold every recorded memory in the order
    it was first recorded (a later record reusing an id is ignored).
    ``dropped`` maps explicitly dropped observation ids to the branch
    position of the drop. ``positions`` maps each memory id to the branch
    position of the entry that recorded it and ``recorded_by`` to that
    entry's id. ``observed_up_to`` / ``reflected_up_to`` / ``dropped_up_to``
    are the latest coverage markers of each record type.
    """

    observations: dict[str, Observation] = field(default_factory=dict)
    reflections: dict[str, Reflection] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    record_at: dict[int, str] = field(default_factory=dict)
    observed_up_to: str | None = None
    reflected_up_to: str | None = None
    dropped_up_to: str | None = None
    latest_fold: FoldPoint | None = None
    record_entry_ids: list[str] = field(default_factory=list)
    invalid_entry_ids: list[str] = field(default_factory=list)
    entry_count: int = 0

    def fold(self, entries: Iterable[Mapping[str, Any]]) -> ObservationalMemoryLedger:
        """Continue folding with more branch entries (appended after the ones
        already folded); returns ``self``.

        This is the hot path of every projection, recall and status call:
        most entries are messages and cost one ``get`` and one comparison;
        only memory records take a method call, and their memories are
        checked inline (:func:`_parsed_memories`).
        """
        position = self.entry_count - 1
        for entry in entries:
            position += 1
            try:
                kind = entry.get("kind")
            except AttributeError:  # not a mapping: not a memory record
                continue
            if kind == "custom":
                data = entry.get("data")
                if type(data) is not dict and not isinstance(data, Mapping):
                    continue
                record_type = data.get("type")
                if record_type == OBSERVATIONS_RECORDED or record_type == REFLECTIONS_RECORDED:
                    self._record(entry, data, position, record_type == OBSERVATIONS_RECORDED)
                elif record_type == OBSERVATIONS_DROPPED:
                    self._drop(entry, data, position)
            elif kind == "compaction":
                self._compaction(entry, position)
        self.entry_count = position + 1
        return self

    def _record(
        self, entry: Mapping[str, Any], data: Mapping[str, Any], position: int, observed: bool
    ) -> None:
        """An observations (``observed``) or reflections record: all its
        memories, or none of them and the entry listed as invalid."""
        entry_id = entry.get("id")
        if not isinstance(entry_id, str):
            return
        into: dict[str, Any]
        if observed:
            items, refs_key, into = data.get("observations"), "sourceEntryIds", self.observations
        else:
            items, refs_key, into = data.get("reflections"), "observationIds", self.reflections
        # All or nothing per record: a half-understood record is not memory.
        parsed = _parsed_memories(items, refs_key, observed)
        if parsed is None:
            self.invalid_entry_ids.append(entry_id)
            return
        positions = self.positions
        for checked in parsed:
            memory_id = checked["id"]
            if memory_id not in into:
                into[memory_id] = checked
                positions[memory_id] = position
        self.record_at[position] = entry_id
        self.record_entry_ids.append(entry_id)
        marker = data.get("coversUpToId")
        if isinstance(marker, str) and marker:
            if observed:
                self.observed_up_to = marker
            else:
                self.reflected_up_to = marker

    def _drop(self, entry: Mapping[str, Any], data: Mapping[str, Any], position: int) -> None:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str):
            return
        ids = data.get("observationIds")
        if type(ids) is not list or not all(is_memory_id(i) for i in ids):
            self.invalid_entry_ids.append(entry_id)
            return
        for memory_id in ids:
            self.dropped.setdefault(memory_id, position)
        self.dropped_up_to = _marker(data, self.dropped_up_to)
        self.record_at[position] = entry_id
        self.record_entry_ids.append(entry_id)

    def recorded_by(self, memory_id: str) -> str | None:
        """The id of the entry that recorded ``memory_id`` (None when unknown)."""
        position = self.positions.get(memory_id)
        return None if position is None else self.record_at.get(position)

    def _compaction(self, entry: Mapping[str, Any], position: int) -> None:
        data = entry.get("data")
        memory = data.get("memory") if isinstance(data, Mapping) else None
        entry_id = entry.get("id")
        if memory is None or not isinstance(entry_id, str):
            return
        if not is_folded_memory(memory):
            self.invalid_entry_ids.append(entry_id)
            return
        assert isinstance(memory, Mapping)
        observations = [parse_observation(o) for o in memory["observations"]]
        reflections = [parse_reflection(r) for r in memory["reflections"]]
        if any(o is None for o in observations) or any(r is None for r in reflections):
            self.invalid_entry_ids.append(entry_id)
            return
        # A fold normally repeats memories recorded earlier on the branch; one
        # copied from elsewhere (a fork of a folded branch) still counts.
        for item in observations:
            assert item is not None
            if item["id"] not in self.observations:
                self.observations[item["id"]] = item
                self.positions[item["id"]] = position
        for ref in reflections:
            assert ref is not None
            if ref["id"] not in self.reflections:
                self.reflections[ref["id"]] = ref
                self.positions[ref["id"]] = position
        self.record_at[position] = entry_id
        folded: FoldedMemory = {
            "type": "om.folded",
            "version": 1,
            "fullFold": bool(memory["fullFold"]),
            "observations": [o for o in observations if o is not None],
            "reflections": [r for r in reflections if r is not None],
            "droppedObservationIds": list(memory["droppedObservationIds"]),
        }
        self.latest_fold = FoldPoint(
            entry_id, position, folded, len(self.observations), len(self.reflections)
        )

    # --- views ----------------------------------------------------------------------

    def active_observations(self) -> list[Observation]:
        """Recorded observations that no drop record removed, in recorded order."""
        dropped = self.dropped
        return [o for key, o in self.observations.items() if key not in dropped]

    def summary(self) -> dict[str, Any]:
        """Counts and coverage markers as JSON (camelCase), for status and golden files."""
        return {
            "observations": list(self.observations),
            "reflections": list(self.reflections),
            "droppedObservationIds": list(self.dropped),
            "observedUpToId": self.observed_up_to,
            "reflectedUpToId": self.reflected_up_to,
            "droppedUpToId": self.dropped_up_to,
            "latestFoldEntryId": self.latest_fold.entry_id if self.latest_fold else None,
            "recordEntryIds": list(self.record_entry_ids),
            "invalidEntryIds": list(self.invalid_entry_ids),
        }


def _parsed_memories(items: object, refs_key: str, observed: bool) -> list[Any] | None:
    """Every memory of a record, or None when one of them is malformed."""
    if type(items) is not list:
        return None
    parsed: list[Any] = []
    checked: Any
    for item in items:
        # parse_observation / parse_reflection inlined for plain dicts (what
        # every store returns); other mappings take the general path.
        if type(item) is dict:
            memory_id = item.get("id")
            refs = item.get(refs_key)
            if (
                type(memory_id) is not str
                or len(memory_id) != 12
                or memory_id.strip(_HEX_DIGITS)
                or type(item.get("content")) is not str
                or type(refs) is not list
            ):
                return None
            for ref in refs:
                if type(ref) is not str:
                    return None
            parsed.append(item)
            continue
        checked = parse_observation(item) if observed else parse_reflection(item)
        if checked is None:
            return None
        parsed.append(checked)
    return parsed


def _marker(data: Mapping[str, Any], previous: str | None) -> str | None:
    marker = data.get("coversUpToId")
    return marker if isinstance(marker, str) and marker else previous


def fold_observational_memory_ledger(
    entries: Iterable[Mapping[str, Any]],
) -> ObservationalMemoryLedger:
    """Fold the memory records of ``entries`` (one branch, root first) into a
    ledger: observations, reflections, drops, coverage markers and the latest
    fold. O(n); no I/O, no provider, never raises on malformed records."""
    return ObservationalMemoryLedger().fold(entries)
