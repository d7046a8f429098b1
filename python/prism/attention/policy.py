"""How deep a trip goes and when the gate may act: the trip policies.

The reference stops shrinking as soon as the request is back under
``trigger_ratio``. On a growing session that makes the gate trip again on
almost every turn, and every trip moves the first changed row, so the prompt
cache breaks each time (docs/attention.md, "Measured"). The policies:

- ``"deep"`` (default): nothing changes under the trigger (the reference's
  contract), and a trip reduces *everything* eligible, so the next trip is
  as far away as it can be. Among the gates that never act under the
  trigger this is the cheapest schedule on the benchmark's fixtures.
- ``"proactive"`` (opt-in): like ``"deep"``, and in addition, at a request
  that carries a new tool result and is at least ``proactive_floor`` of the
  cap, it reduces everything eligible when that pays for itself in cache
  pricing (see :func:`proactive_ratio`). Cheaper still, at the price of the
  model seeing less raw context earlier.
- ``"reference"``: the original's stop-as-soon-as-under behaviour.

``target_ratio``, when set, overrides the depth of a trip at the trigger
(shrink to ``target_ratio * cap``) under any policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prism.errors import AttentionConfigError

POLICIES = ("deep", "proactive", "reference")
DEFAULT_POLICY = "deep"
DEFAULT_PROACTIVE_FLOOR = 0.25
# Cache pricing as multiples of the base input price when the model config
# declares none (the common read 0.1x / write 1.25x of the large providers).
DEFAULT_CACHE_READ = 0.1
DEFAULT_CACHE_WRITE = 1.25
# How many later requests a proactive trip's saving is counted over when it
# is weighed against the rewrite it causes. Fifteen is about one working
# session between trips on the benchmark fixtures; with the default pricing
# it gives a ratio of about 0.77 (the rule of thumb was 0.75).
PROACTIVE_HORIZON = 15
DEFAULT_MAX_SUMMARY_BYTES = 2048


def cache_multipliers(model: Mapping[str, Any] | None) -> tuple[float, float]:
    """``(read, write)`` cache prices as multiples of the input price, from
    ``model["pricing"]`` (USD per million tokens), else 0.1 / 1.25."""
    pricing = model.get("pricing") if isinstance(model, Mapping) else None
    if isinstance(pricing, Mapping):
        base = pricing.get("input")
        read = pricing.get("cacheRead")
        write = pricing.get("cacheWrite")
        if all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in (base, read, write)
        ):
            assert isinstance(base, int | float)
            assert isinstance(read, int | float) and isinstance(write, int | float)
            if base > 0 and 0 <= read < write:
                return read / base, write / base
    return DEFAULT_CACHE_READ, DEFAULT_CACHE_WRITE


def proactive_ratio(read: float, write: float, horizon: int = PROACTIVE_HORIZON) -> float:
    """Reducible tokens per token kept at which a proactive trip pays for itself.

    A trip rewrites what is left of the request at the write price instead
    of reading it (``(write - read) * kept``) and then saves ``read *
    reducible`` on each of the next ``horizon`` requests, so it pays when
    ``reducible >= (write - read) / (read * horizon) * kept``.

    Free cache reads (``read == 0``) save nothing later, so no trip ever pays:
    the ratio is infinite (the gate never trips proactively), not a division
    by zero that would stop every agent on such a model from being built."""
    if read <= 0:
        return math.inf
    return (write - read) / (read * horizon)


@dataclass(frozen=True, slots=True)
class ToolResultFold:
    """A host summarizer for tool results the gate has picked.

    ``summarize(block)`` gets the original ``tool_result`` block and returns
    the text that replaces its ``result`` (capped at ``max_summary_bytes``
    UTF-8 bytes), or ``None`` to keep the digest stub for that row. It is
    called at most once per tool-call id per session: the answer is cached
    on the sticky frontier, so a re-applied row never calls it again and its
    text never changes (which would break the prompt cache). A summary that
    is not shorter than the payload, or a summarizer that raises, falls back
    to the digest stub for good.
    """

    summarize: Callable[[Mapping[str, Any]], str | None]
    max_summary_bytes: int = DEFAULT_MAX_SUMMARY_BYTES

    def __post_init__(self) -> None:
        if not callable(self.summarize):
            raise AttentionConfigError(
                "attention tool_result_fold.summarize must be callable, got "
                f"{type(self.summarize).__name__}"
            )
        size = self.max_summary_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise AttentionConfigError(
                f"attention tool_result_fold.max_summary_bytes must be an integer >= 1, got {size!r}"
            )


def coerce_fold(value: object) -> ToolResultFold | None:
    """``None``, a :class:`ToolResultFold`, a bare callable, or an object with
    a ``summarize`` method (and optionally ``max_summary_bytes``)."""
    if value is None or isinstance(value, ToolResultFold):
        return value
    summarize = getattr(value, "summarize", None)
    if callable(summarize):
        size = getattr(value, "max_summary_bytes", DEFAULT_MAX_SUMMARY_BYTES)
        return ToolResultFold(summarize, size)
    if callable(value):
        return ToolResultFold(value)
    raise AttentionConfigError(
        "attention tool_result_fold must be a ToolResultFold, a callable or an object with "
        f"a summarize method, got {type(value).__name__}"
    )


def check_policy(value: object) -> str:
    if value not in POLICIES:
        raise AttentionConfigError(
            f"attention policy must be one of {', '.join(POLICIES)}, got {value!r}"
        )
    assert isinstance(value, str)
    return value


def at_tool_result_boundary(lists: Sequence[Sequence[Any]]) -> bool:
    """Whether the request ends with a tool result (the model is about to
    read a new result): the only point where a proactive trip may happen.
    ``lists`` are the message groups in compose order."""
    for group in reversed(lists[2:]):  # history, input, attachments, tool_results
        if group:
            last = group[-1]
            role = last.get("role") if isinstance(last, Mapping) else getattr(last, "role", None)
            return bool(role == "tool")
    return False
