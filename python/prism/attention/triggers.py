"""Compaction triggers the attention compiler validates or produces.

``assert_compaction_trigger`` is the one fail-closed check of the trigger union
(``threshold_entries`` | ``input_ratio`` | ``custom``); prism.compaction uses
the same rules. ``create_attention_truncation_trigger`` turns the compiler's
``truncated`` signal into a ``custom`` trigger.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from prism.errors import AttentionConfigError

TRIGGER_TYPES = ("threshold_entries", "input_ratio", "custom")


def assert_compaction_trigger(trigger: object) -> None:
    """Raise ``TypeError`` (:class:`AttentionConfigError`) unless ``trigger`` is
    a well-formed compaction trigger, so a typo never silently disables
    compaction."""
    if not isinstance(trigger, Mapping):
        raise AttentionConfigError(
            f"compaction trigger must be an object, got {type(trigger).__name__}"
        )
    kind = trigger.get("type")
    if kind == "threshold_entries":
        entries = trigger.get("entries")
        if isinstance(entries, bool) or not isinstance(entries, int) or entries < 1:
            raise AttentionConfigError(
                f"threshold_entries trigger needs a positive integer 'entries', got {entries!r}"
            )
    elif kind == "input_ratio":
        ratio = trigger.get("ratio")
        if (
            isinstance(ratio, bool)
            or not isinstance(ratio, int | float)
            or not math.isfinite(ratio)
            or not 0 < ratio <= 1
        ):
            raise AttentionConfigError(
                f"input_ratio trigger needs a 'ratio' in (0, 1], got {ratio!r}"
            )
    elif kind == "custom":
        fn = trigger.get("should_compact", trigger.get("shouldCompact"))
        if not callable(fn):
            raise AttentionConfigError("custom trigger needs a callable 'should_compact'")
    else:
        raise AttentionConfigError(
            f"unknown compaction trigger type {kind!r}; expected one of {list(TRIGGER_TYPES)}"
        )


class AttentionTruncationTrigger:
    """Counts consecutive truncated ``attention_compiled`` turns.

    ``trigger`` fires once per armed streak (``streak() >= threshold``) at the
    next compaction decision; a mutated turn that was not truncated clears the
    streak because the pressure was relieved.
    """

    __slots__ = ("_streak", "threshold", "trigger")

    def __init__(self, threshold: int) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise AttentionConfigError(
                f"truncation trigger threshold must be a positive integer, got {threshold!r}"
            )
        self.threshold = threshold
        self._streak = 0
        self.trigger: dict[str, Any] = {"type": "custom", "should_compact": self._should_compact}

    def observe(self, event: Mapping[str, Any]) -> None:
        """Feed every agent event (others are ignored)."""
        if not isinstance(event, Mapping) or event.get("type") != "attention_compiled":
            return
        if event.get("truncated") is True:
            self._streak += 1
        else:
            self._streak = 0

    def streak(self) -> int:
        return self._streak

    def reset(self) -> None:
        self._streak = 0

    def _should_compact(self, context: object = None) -> bool:
        if self._streak >= self.threshold:
            self._streak = 0  # fire once; a new streak must arm again
            return True
        return False


def create_attention_truncation_trigger(threshold: int = 2) -> AttentionTruncationTrigger:
    """A ``custom`` compaction trigger armed by ``threshold`` consecutive
    truncated turns (validated here so a typo fails at config time)."""
    return AttentionTruncationTrigger(threshold)
