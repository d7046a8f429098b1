"""When to compact: the trigger union and the one helper that decides.

``resolve_should_compact(options, ctx)`` is the single decision point for
the session's auto-compaction and for host code. Triggers are plain dicts:

- ``{"type": "threshold_entries", "entries": n}`` -> ``entry_count > n``
- ``{"type": "input_ratio", "ratio": r}`` -> ``estimated_input_tokens >= r *
  input_cap_tokens``; the cap comes from ``prism.attention.resolve_input_cap``
  and an unresolvable cap raises (a config error must fail the run loudly)
- ``{"type": "custom", "should_compact": fn}`` -> ``fn(ctx)``, sync or async;
  a callback that raises decides False (never compact on a guess)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prism import _native
from prism.attention.options import resolve_input_cap

# One implementation of the trigger rules, shared with the attention compiler
# (which validates the same union). It raises ``AttentionConfigError`` (a
# ``ConfigError`` and a ``TypeError``) for a malformed trigger or an unknown
# ``type``, so a typo never silently disables compaction.
from prism.attention.triggers import assert_compaction_trigger
from prism.compaction.options import coerce_compaction_options
from prism.contracts import Message, ModelConfig, SessionEntry

__all__ = ["ShouldCompactContext", "assert_compaction_trigger", "resolve_should_compact"]


class ShouldCompactContext:
    """What a trigger decides with. ``estimated_input_tokens`` and
    ``input_cap_tokens`` are computed on first access only, so a ``custom``
    callback that reads counts never needs a model cap.

    ``messages`` (the provider messages the next request would carry) feed
    the default estimate; without them the branch ``entries`` are estimated,
    which over-counts after a compaction. ``estimate_input_tokens`` replaces
    the estimate entirely. ``attention`` is passed to ``resolve_input_cap``
    as its options (``max_input_tokens``, ``reserve_tokens``, or a compiler).
    """

    __slots__ = (
        "_cap",
        "_estimate",
        "_estimated",
        "attention",
        "entries",
        "entry_count",
        "messages",
        "metadata",
        "model",
        "session_id",
    )

    def __init__(
        self,
        *,
        session_id: str,
        entries: Sequence[SessionEntry] = (),
        entry_count: int | None = None,
        messages: Sequence[Message] | None = None,
        model: ModelConfig | Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        attention: object = None,
        estimate_input_tokens: Callable[[], int] | None = None,
    ) -> None:
        self.session_id = session_id
        self.entries = entries
        self.entry_count = len(entries) if entry_count is None else entry_count
        self.messages = messages
        self.model = model
        self.metadata: Mapping[str, Any] = dict(metadata or {})
        self.attention = attention
        self._estimate = estimate_input_tokens
        self._estimated: int | None = None
        self._cap: int | None = None

    @property
    def last_entry_kind(self) -> str | None:
        return self.entries[-1]["kind"] if self.entries else None

    @property
    def estimated_input_tokens(self) -> int:
        if self._estimated is None:
            self._estimated = self._compute_estimate()
        return self._estimated

    @property
    def input_cap_tokens(self) -> int:
        if self._cap is None:
            self._cap = resolve_input_cap(self.attention, self.model)
        return self._cap

    def _compute_estimate(self) -> int:
        if self._estimate is not None:
            return int(self._estimate())
        if self.messages is not None:
            return sum(_native.estimate_message_tokens(m) for m in self.messages)
        return sum(_native.estimate_entry_tokens(e) for e in self.entries)


async def resolve_should_compact(options: object, ctx: ShouldCompactContext) -> bool:
    """Whether auto-compaction should run now.

    ``options`` is ``CompactionOptions``, its camelCase mapping, or None/False
    (never). False when no trigger is configured or the branch's last entry is
    already a compaction (a fresh summary is never compacted again). Raises
    ``ConfigError`` for an invalid trigger or an unresolvable ``input_ratio``
    cap; a raising ``custom`` callback decides False.
    """
    resolved = coerce_compaction_options(options)
    if resolved is None:
        return False
    trigger = resolved.effective_trigger
    if trigger is None:
        return False
    assert_compaction_trigger(trigger)  # raw mappings reach here unvalidated too
    if ctx.last_entry_kind == "compaction":
        return False
    kind = trigger["type"]
    if kind == "threshold_entries":
        return ctx.entry_count > int(trigger["entries"])
    if kind == "input_ratio":
        cap = ctx.input_cap_tokens
        return ctx.estimated_input_tokens >= float(trigger["ratio"]) * cap
    callback = trigger.get("should_compact", trigger.get("shouldCompact"))
    try:
        decision = callback(ctx)
        if inspect.isawaitable(decision):
            decision = await decision
    except Exception:
        # Includes a callback reading a cap that cannot resolve: fail closed.
        return False
    return decision is True
