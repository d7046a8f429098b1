"""Projections: which memories a reader sees, built from one folded ledger.

- ``full``: every memory recorded on the branch, dropped ones included
  (their ids are also listed in ``dropped_observation_ids``).
- ``active``: recorded minus explicitly dropped observations: the whole
  live memory (``om:view full``).
- ``folded``: what the model sees after the latest observational-memory
  compaction: that compaction's ``data.memory`` plus memories recorded after
  it, minus drops. Without such a compaction it equals ``active``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, TypeVar

from prism._native import estimate_text_tokens
from prism.branching import branch_entries
from prism.compaction.observational_memory.ids import is_memory_id
from prism.compaction.observational_memory.ledger import (
    ObservationalMemoryLedger,
    fold_observational_memory_ledger,
)
from prism.compaction.observational_memory.records import (
    FoldedMemory,
    Observation,
    Reflection,
    parse_observation,
    parse_reflection,
)
from prism.errors import ConfigError

_M = TypeVar("_M")
ProjectionMode = Literal["active", "full", "folded"]
PROJECTION_MODES: tuple[ProjectionMode, ...] = ("active", "full", "folded")


@dataclass(frozen=True, slots=True)
class ObservationalMemoryProjection:
    """One view of the memory of a branch (see the module docstring).

    ``hidden_observation_ids`` (folded mode) are observations the latest
    full fold left out of the summary; they stay recorded and recallable.
    Token counts use Prism's chars/4 estimate of each memory's content.
    """

    mode: ProjectionMode
    observations: list[Observation]
    reflections: list[Reflection]
    dropped_observation_ids: list[str]
    hidden_observation_ids: list[str]
    full_fold: bool
    observation_tokens: int
    reflection_tokens: int
    observed_up_to: str | None
    reflected_up_to: str | None
    dropped_up_to: str | None
    ledger: ObservationalMemoryLedger = field(repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "observations": [dict(o) for o in self.observations],
            "reflections": [dict(r) for r in self.reflections],
            "droppedObservationIds": list(self.dropped_observation_ids),
            "hiddenObservationIds": list(self.hidden_observation_ids),
            "fullFold": self.full_fold,
            "observationTokens": self.observation_tokens,
            "reflectionTokens": self.reflection_tokens,
            "observedUpToId": self.observed_up_to,
            "reflectedUpToId": self.reflected_up_to,
            "droppedUpToId": self.dropped_up_to,
        }


def memory_tokens(items: Iterable[Mapping[str, Any]]) -> int:
    return sum(estimate_text_tokens(item["content"]) for item in items)


def select_branch(
    entries: Sequence[Mapping[str, Any]], leaf_id: str | None
) -> Sequence[Mapping[str, Any]]:
    """``entries`` itself, or the root-to-``leaf_id`` path through them when a
    leaf is named (for callers holding every entry of a session)."""
    if leaf_id is None:
        return entries
    return branch_entries(entries, leaf_id)  # type: ignore[arg-type]


def _recorded_after(memories: dict[str, _M], count: int) -> Iterator[tuple[str, _M]]:
    """Memories recorded after the fold: the ledger inserts in branch order,
    so they are the dict's tail after the ``count`` it held at the fold."""
    return islice(memories.items(), count, None)


def build_observational_memory_projection(
    entries: Sequence[Mapping[str, Any]] | ObservationalMemoryLedger,
    mode: ProjectionMode = "active",
    *,
    leaf_id: str | None = None,
) -> ObservationalMemoryProjection:
    """Project the memory of one branch. ``entries`` is the current branch,
    root first (``session.branch_entries()``), or a ledger already folded from
    it; with ``leaf_id`` the branch ending there is cut out of ``entries``
    first. O(n), no I/O. An unknown ``mode`` raises ``ConfigError``."""
    if mode not in PROJECTION_MODES:
        raise ConfigError(
            f"observational memory projection mode must be one of {list(PROJECTION_MODES)}, "
            f"got {mode!r}"
        )
    if isinstance(entries, ObservationalMemoryLedger):
        ledger = entries
    else:
        ledger = fold_observational_memory_ledger(select_branch(entries, leaf_id))
    dropped = ledger.dropped
    hidden: list[str] = []
    full_fold = False
    if mode == "full":
        observations = list(ledger.observations.values())
        reflections = list(ledger.reflections.values())
    elif mode == "active" or ledger.latest_fold is None:
        observations = ledger.active_observations()
        reflections = list(ledger.reflections.values())
    else:
        fold = ledger.latest_fold
        memory = fold.memory
        full_fold = memory["fullFold"]
        hidden_set = set(memory["droppedObservationIds"])
        seen = {o["id"] for o in memory["observations"]}
        observations = [
            o
            for o in memory["observations"]
            if o["id"] not in dropped and o["id"] not in hidden_set
        ]
        observations.extend(
            o
            for key, o in _recorded_after(ledger.observations, fold.observation_count)
            if key not in dropped and key not in seen
        )
        seen_reflections = {r["id"] for r in memory["reflections"]}
        reflections = list(memory["reflections"])
        reflections.extend(
            r
            for key, r in _recorded_after(ledger.reflections, fold.reflection_count)
            if key not in seen_reflections
        )
        hidden = [key for key in memory["droppedObservationIds"] if key not in dropped]
    return ObservationalMemoryProjection(
        mode=mode,
        observations=observations,
        reflections=reflections,
        dropped_observation_ids=list(dropped),
        hidden_observation_ids=hidden,
        full_fold=full_fold,
        observation_tokens=memory_tokens(observations),
        reflection_tokens=memory_tokens(reflections),
        observed_up_to=ledger.observed_up_to,
        reflected_up_to=ledger.reflected_up_to,
        dropped_up_to=ledger.dropped_up_to,
        ledger=ledger,
    )


def create_folded_memory_details(
    *,
    observations: Sequence[Mapping[str, Any]],
    reflections: Sequence[Mapping[str, Any]],
    dropped_observation_ids: Sequence[str] = (),
    full_fold: bool = False,
) -> FoldedMemory:
    """The JSON for a compaction entry's ``data.memory`` (type ``om.folded``,
    version 1). Each memory is checked; a malformed one raises
    ``ConfigError`` naming its position, and nothing is built."""
    checked_observations = _checked(
        observations, parse_observation, "observations", "sourceEntryIds"
    )
    checked_reflections = _checked(reflections, parse_reflection, "reflections", "observationIds")
    if isinstance(dropped_observation_ids, str) or not all(
        is_memory_id(i) for i in dropped_observation_ids
    ):
        raise ConfigError("dropped_observation_ids must be a list of memory ids")
    if not isinstance(full_fold, bool):
        raise ConfigError("full_fold must be a bool")
    return {
        "type": "om.folded",
        "version": 1,
        "fullFold": full_fold,
        "observations": checked_observations,
        "reflections": checked_reflections,
        "droppedObservationIds": list(dropped_observation_ids),
    }


_MemoryT = TypeVar("_MemoryT")


def _checked(
    items: Iterable[Any], parse: Callable[[Any], _MemoryT | None], name: str, refs: str
) -> list[_MemoryT]:
    """Every item parsed, or ``ConfigError`` naming the first malformed one."""
    checked: list[_MemoryT] = []
    for index, item in enumerate(items):
        parsed = parse(item)
        if parsed is None:
            raise ConfigError(
                f"{name}[{index}] must be {{id: 12 hex chars, content: str, {refs}: [str]}}"
            )
        checked.append(parsed)
    return checked
