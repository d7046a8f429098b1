"""The fast compaction strategy: prepared memory as the summary, no model call.

Like the default strategy it keeps the newest ``keep_recent_entries``
message entries raw and covers everything older with one summary; the
summary is the rendered memory (reflections, then the visible
observations) instead of a transcript digest. When the visible observations
exceed ``observations_pool_max_tokens`` it performs a full fold: it keeps
the newest observations that fit ``observations_pool_target_tokens``,
preferring to leave out observations a reflection already consolidates.
The entry's ``data.memory`` records exactly what the summary shows. A
branch with no memory yet falls back to the default strategy's summary, so
compacting early never loses the older conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.compaction.default import create_default_compaction_strategy
from prism.compaction.observational_memory.projection import (
    build_observational_memory_projection,
    create_folded_memory_details,
    memory_tokens,
)
from prism.compaction.observational_memory.records import Observation, Reflection
from prism.compaction.observational_memory.render import render_observational_memory
from prism.compaction.observational_memory.settings import (
    ObservationalMemorySettings,
    resolve_observational_memory_settings,
)
from prism.compaction.options import (
    DEFAULT_KEEP_RECENT_ENTRIES,
    CompactionContext,
    CompactionResult,
    compaction_entry_data,
    is_compaction_entry_data,
)
from prism.errors import ConfigError

STRATEGY_NAME = "observational-memory"


def plan_full_fold(
    observations: Sequence[Observation], reflections: Sequence[Reflection], target_tokens: int
) -> tuple[list[Observation], list[str]]:
    """Observations to keep visible (order kept) and the ids left out, so the
    kept ones fit ``target_tokens``. Consolidated observations (named by a
    reflection) go first, oldest first; then the oldest of the rest."""
    from prism._native import estimate_text_tokens

    consolidated = {key for r in reflections for key in r["observationIds"]}
    tokens = {o["id"]: estimate_text_tokens(o["content"]) for o in observations}
    total = sum(tokens.values())
    hidden: set[str] = set()
    for group in (
        [o for o in observations if o["id"] in consolidated],
        [o for o in observations if o["id"] not in consolidated],
    ):
        for observation in group:
            if total <= target_tokens:
                break
            hidden.add(observation["id"])
            total -= tokens[observation["id"]]
    kept = [o for o in observations if o["id"] not in hidden]
    return kept, [o["id"] for o in observations if o["id"] in hidden]


class ObservationalMemoryCompactionStrategy:
    """Built by :func:`create_observational_memory_compaction_strategy`."""

    __slots__ = ("keep_recent_entries", "name", "settings")

    def __init__(
        self,
        *,
        name: str,
        keep_recent_entries: int,
        settings: ObservationalMemorySettings,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("compaction strategy name must be a non-empty string")
        if (
            isinstance(keep_recent_entries, bool)
            or not isinstance(keep_recent_entries, int)
            or keep_recent_entries < 0
        ):
            raise ConfigError(
                f"keep_recent_entries must be an integer >= 0, got {keep_recent_entries!r}"
            )
        self.name = name
        self.keep_recent_entries = keep_recent_entries
        self.settings = settings

    async def compact(self, context: CompactionContext) -> CompactionResult:
        entries = list(context.entries)
        keep = (
            self.keep_recent_entries
            if context.keep_recent_entries is None
            else context.keep_recent_entries
        )
        projection = build_observational_memory_projection(entries, "folded")
        observations = projection.observations
        reflections = projection.reflections
        hidden = list(projection.hidden_observation_ids)
        full_fold = False
        # Thresholds are in the provider's tokens; the projection counts
        # chars/4, so the agent's calibration (token_scale) converts.
        scale = context.token_scale
        if projection.observation_tokens * scale > self.settings.observations_pool_max_tokens:
            target = int(self.settings.observations_pool_target_tokens / scale)
            observations, newly_hidden = plan_full_fold(observations, reflections, target)
            hidden.extend(newly_hidden)
            full_fold = True
        redactor = context.redactor  # the agent's: the one redactor of the run
        summary = render_observational_memory(reflections, observations, redactor=redactor)
        if not summary:
            fallback = create_default_compaction_strategy(name=self.name, keep_recent_entries=keep)
            summary = (await fallback.compact(context)).summary
        if len(redactor):
            summary = redactor.redact_text(summary)
        memory = create_folded_memory_details(
            observations=observations,
            reflections=reflections,
            # Explicit drops and observations folded out of view: a reader of
            # data.memory alone knows every id the summary leaves out.
            dropped_observation_ids=list(
                dict.fromkeys([*projection.dropped_observation_ids, *hidden])
            ),
            full_fold=full_fold,
        )
        if len(redactor):
            memory = redactor.redact_value(memory)
        keep_ids, through = _keep_and_through(entries, keep)
        data: dict[str, Any] = dict(
            compaction_entry_data(
                through_entry_id=through,
                keep_entry_ids=keep_ids,
                strategy=self.name,
                trigger=context.trigger,
            )
        )
        data["memory"] = memory
        return CompactionResult(summary=summary, entries=[context.compaction_entry(summary, data)])

    def __repr__(self) -> str:
        return (
            f"ObservationalMemoryCompactionStrategy(name={self.name!r}, "
            f"keep_recent_entries={self.keep_recent_entries})"
        )


def _keep_and_through(
    entries: Sequence[Mapping[str, Any]], keep: int
) -> tuple[list[str], str | None]:
    """The default strategy's cut: the newest ``keep`` message entries of the
    live region stay raw; the summary covers everything before the first."""
    start = 0
    carried: list[Mapping[str, Any]] = []
    previous_through: str | None = None
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.get("kind") == "compaction" and is_compaction_entry_data(entry.get("data")):
            kept = set(entry["data"]["keepEntryIds"])
            carried = [e for e in entries[:index] if e["id"] in kept]
            previous_through = entry["data"]["throughEntryId"]
            start = index + 1
            break
    live = [*carried, *entries[start:]]
    message_ids = [e["id"] for e in live if e.get("kind") == "message"]
    keep_ids = message_ids[len(message_ids) - keep :] if keep else []
    kept_set = set(keep_ids)
    first_kept = next((i for i, e in enumerate(live) if e["id"] in kept_set), len(live))
    through = live[first_kept - 1]["id"] if first_kept else previous_through
    return keep_ids, through


def create_observational_memory_compaction_strategy(
    *,
    name: str = STRATEGY_NAME,
    keep_recent_entries: int = DEFAULT_KEEP_RECENT_ENTRIES,
    settings: object = None,
    overrides: Mapping[str, Any] | None = None,
) -> ObservationalMemoryCompactionStrategy:
    """A ``CompactionStrategy`` that renders existing memory as the summary.
    ``settings``/``overrides`` are resolved like
    :func:`resolve_observational_memory_settings` (or pass resolved
    ``ObservationalMemorySettings``); only the pool sizes matter here. O(n)
    over the branch; never calls a provider."""
    resolved = (
        settings
        if isinstance(settings, ObservationalMemorySettings)
        else resolve_observational_memory_settings(settings, overrides)
    )
    return ObservationalMemoryCompactionStrategy(
        name=name, keep_recent_entries=keep_recent_entries, settings=resolved
    )


__all__ = [
    "STRATEGY_NAME",
    "ObservationalMemoryCompactionStrategy",
    "create_observational_memory_compaction_strategy",
    "memory_tokens",
    "plan_full_fold",
]
