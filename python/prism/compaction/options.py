"""Compaction options, contexts and results (docs/compaction.md).

``CompactionOptions`` is what a host puts on ``create_agent(compaction=...)``,
a run's ``compaction=`` or ``session.compact(...)``. It is validated at
construction, so a typo in a trigger fails when the options are built.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from prism._clock import utc_timestamp
from prism._options import coerce_options, options_from_mapping
from prism.attention.triggers import assert_compaction_trigger
from prism.contracts import CompactionEntry, CompactionEntryData, SessionEntry
from prism.errors import ConfigError
from prism.security.redaction import SecretRedactor, require_redactor

DEFAULT_STRATEGY_NAME = "default-compaction"
DEFAULT_KEEP_RECENT_ENTRIES = 8
DEFAULT_MAX_SUMMARY_CHARS = 4000


@dataclass(frozen=True, slots=True)
class CompactionContext:
    """What a strategy sees for one compaction call.

    ``entries`` is the current branch, root first (raw, compactions
    included). ``keep_recent_entries``/``max_summary_chars`` override the
    strategy's defaults for this call. ``redactor`` is the agent's
    ``SecretRedactor`` (``NOOP_REDACTOR`` when there are no secrets): every
    strategy masks what it writes with it, and none keeps its own secrets.
    ``leaf_id`` is the entry the compaction entry hangs under (default: the
    last of ``entries``); ``new_entry_id`` lets the runtime choose ids.
    ``retry``/``sleep`` are the session's, for strategies that call a model.
    """

    session_id: str
    entries: Sequence[SessionEntry]
    trigger: str = "manual"
    keep_recent_entries: int | None = None
    max_summary_chars: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    leaf_id: str | None = None
    new_entry_id: Callable[[], str] | None = None
    # For strategies that call a provider (prism.compaction.llm): the
    # session's retry options (RetryOptions or None) and its sleep function.
    retry: Any = None
    sleep: Callable[[float], Awaitable[Any]] | None = None
    redactor: SecretRedactor = field(kw_only=True, repr=False)
    # Billed tokens per estimated token for the session's model (the agent's
    # token_calibration; 1.0 without one): strategies that budget in tokens
    # multiply their chars/4 estimates by it.
    token_scale: float = field(default=1.0, kw_only=True)

    def __post_init__(self) -> None:
        require_redactor(self.redactor, owner="CompactionContext")
        scale = self.token_scale
        if (
            isinstance(scale, bool)
            or not isinstance(scale, int | float)
            or not math.isfinite(scale)
            or scale <= 0
        ):
            raise ConfigError(
                f"CompactionContext.token_scale must be a positive number, got {scale!r}"
            )

    def compaction_entry(self, summary: str, data: Mapping[str, Any]) -> CompactionEntry:
        """The entry a strategy returns: hung under ``leaf_id`` (default: the
        last of ``entries``), its id from ``new_entry_id`` when the runtime
        chooses ids, stamped now."""
        leaf = self.leaf_id
        if leaf is None and self.entries:
            leaf = self.entries[-1]["id"]
        return {
            "id": self.new_entry_id() if self.new_entry_id else f"entry_{uuid.uuid4().hex}",
            "sessionId": self.session_id,
            "parentId": leaf,
            "kind": "compaction",
            "createdAt": utc_timestamp(),
            "summary": summary,
            "data": data,  # type: ignore[typeddict-item]  # strategies add their own keys
        }


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """A strategy's output: the summary text and the entries to append (the
    default strategy returns exactly one ``compaction`` entry)."""

    summary: str
    entries: list[SessionEntry]


@runtime_checkable
class CompactionStrategy(Protocol):
    name: str

    def compact(self, context: CompactionContext) -> Awaitable[CompactionResult]: ...


def _check_count(name: str, value: object, minimum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"compaction option {name} must be an integer >= {minimum}, got {value!r}"
        )


def _trigger_from_json(trigger: object) -> object:
    if not isinstance(trigger, Mapping):
        return trigger  # __post_init__ refuses it with the trigger's own message
    out = dict(trigger)
    if "shouldCompact" in out and "should_compact" not in out:
        out["should_compact"] = out.pop("shouldCompact")
    return out


@dataclass(frozen=True, slots=True)
class CompactionOptions:
    """Compaction settings (all optional).

    ``trigger`` is one of ``{"type": "threshold_entries", "entries": n}``,
    ``{"type": "input_ratio", "ratio": r}`` or ``{"type": "custom",
    "should_compact": fn}`` and replaces ``threshold_entries``. Without either
    there is no auto-compaction; ``session.compact()`` still works.
    """

    strategy: CompactionStrategy | None = None
    threshold_entries: int | None = None
    trigger: Mapping[str, Any] | None = field(
        default=None, metadata={"from_json": _trigger_from_json}
    )
    keep_recent_entries: int | None = None
    max_summary_chars: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_count("threshold_entries", self.threshold_entries, 1)
        _check_count("keep_recent_entries", self.keep_recent_entries, 0)
        _check_count("max_summary_chars", self.max_summary_chars, 1)
        if not isinstance(self.metadata, Mapping):
            raise ConfigError("compaction option metadata must be an object")
        if self.strategy is not None and not callable(getattr(self.strategy, "compact", None)):
            raise ConfigError("compaction option strategy must have a compact(context) method")
        if self.trigger is not None:
            assert_compaction_trigger(self.trigger)

    @property
    def effective_trigger(self) -> Mapping[str, Any] | None:
        """The trigger auto-compaction asks: ``trigger``, else a
        ``threshold_entries`` trigger built from ``threshold_entries``."""
        if self.trigger is not None:
            return self.trigger
        if self.threshold_entries is not None:
            return {"type": "threshold_entries", "entries": self.threshold_entries}
        return None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> CompactionOptions:
        """Build from the original's camelCase form (snake_case keys are
        accepted too). Unknown keys are refused so a typo is not ignored."""
        return cls(**options_from_mapping(cls, value, what="compaction"))


def coerce_compaction_options(value: object) -> CompactionOptions | None:
    """``None``/``False`` -> None (off); ``True`` -> defaults; a mapping ->
    ``from_json``; options as they are (the rule of :mod:`prism._options`)."""
    return coerce_options(value, CompactionOptions, what="compaction")


def is_compaction_entry_data(value: object) -> bool:
    """True when ``value`` has the ``data`` shape of a compaction entry:
    ``throughEntryId`` (string or null), ``keepEntryIds`` (strings),
    ``strategy`` and ``trigger`` (strings)."""
    if not isinstance(value, Mapping):
        return False
    through = value.get("throughEntryId", ...)
    keep = value.get("keepEntryIds")
    return (
        (through is None or isinstance(through, str))
        and isinstance(keep, list)
        and all(isinstance(k, str) for k in keep)
        and isinstance(value.get("strategy"), str)
        and isinstance(value.get("trigger"), str)
    )


def compaction_entry_data(
    *, through_entry_id: str | None, keep_entry_ids: Sequence[str], strategy: str, trigger: str
) -> CompactionEntryData:
    return {
        "throughEntryId": through_entry_id,
        "keepEntryIds": list(keep_entry_ids),
        "strategy": strategy,
        "trigger": trigger,
    }
