"""Prism's own attention scenario: one seeded coding session, replayed through
a real agent once per variant (the compiler off, compaction alone, and the
gate under each policy), summarized into the ``prism bench attention
--json`` document.

Every figure depends only on ``turns`` and ``seed``: the model is scripted,
the tokens are the native estimator's, and no clock or network is read, so
two runs print the same document.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prism._bench.attention.fixtures import Fixture, coding_turns
from prism._bench.attention.scenario import (
    CACHE_READ,
    CACHE_WRITE,
    MODEL,
    WINDOW,
    VariantResult,
    run_variant,
)
from prism.attention import resolve_input_cap

__all__ = [
    "MEASURES",
    "TRIGGER_RATIO",
    "VARIANTS",
    "Variant",
    "percentile",
    "run_scenario",
    "summarize",
]

# The gate's default trigger, as a fraction of the input cap (for the report).
TRIGGER_RATIO = 0.75
MEASURES = (
    "A seeded coding session (each turn: a user message, the model thinks and calls a tool"
    " that returns 1-40 KB, then answers; scripted model, no network) sent through a real"
    " Prism agent once per variant. For each it counts the input tokens sent, the share a"
    " prompt cache could read back, the cache-aware input cost, its per-turn spread, and"
    " how often the cache had to be rewritten."
)


@dataclass(frozen=True)
class Variant:
    """One way to run the session: the ``attention_compiler`` argument of
    ``create_agent``, whether auto-compaction is on, and what that means."""

    name: str
    attention: Any
    compaction: bool
    description: str


VARIANTS: tuple[Variant, ...] = (
    Variant(
        "off",
        None,
        False,
        "attention compiler off, no compaction: every request carries the whole history",
    ),
    Variant(
        "off+compaction",
        None,
        True,
        "compiler off; compaction summarizes the history at 90% of the input cap",
    ),
    Variant(
        "reference",
        {"policy": "reference"},
        True,
        "gate on, reference policy: over 75% of the cap it shrinks the request just under 75%",
    ),
    Variant(
        "target 0.3",
        {"targetRatio": 0.3},
        True,
        "gate on, fixed depth: over 75% of the cap it shrinks the request to 30%",
    ),
    Variant(
        "target 0.5",
        {"targetRatio": 0.5},
        True,
        "gate on, fixed depth: over 75% of the cap it shrinks the request to 50%",
    ),
    Variant(
        "default",
        True,
        True,
        "gate on, default policy: over 75% of the cap it reduces every old thinking block"
        " and tool result it may",
    ),
    Variant(
        "proactive",
        {"policy": "proactive"},
        True,
        "gate on, proactive policy: as default, and also under 75% when a reduction pays"
        " for itself in cheaper cache reads",
    ),
)
"""Prism's variants, in the order the report lists them (``off`` first: the
others are compared with it)."""


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank ``pct`` percentile of ``values`` (0.0 when empty):
    always one of the values, so a p95 is a turn that happened."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[min(rank, len(ordered)) - 1]


def _variant_json(variant: Variant, result: VariantResult, off_cost: float) -> dict[str, Any]:
    total = result.total
    turn_costs = result.turn_costs()
    return {
        "name": variant.name,
        "description": variant.description,
        "turns": len(result.run_ends),
        "requests": len(result.input_tokens),
        "inputTokens": total,
        "peakInputTokens": max(result.input_tokens, default=0),
        "cacheReadTokens": sum(result.cache_read),
        "cacheWriteTokens": sum(result.cache_write),
        "cacheReadShare": round(sum(result.cache_read) / total, 4) if total else 0.0,
        "cost": round(result.cost),
        "costVsOff": round(result.cost / off_cost, 4) if off_cost else None,
        "turnCost": {
            "p50": round(percentile(turn_costs, 50)),
            "p95": round(percentile(turn_costs, 95)),
            "max": round(max(turn_costs, default=0.0)),
        },
        "cacheBusts": sum(result.busts),
        "gateTrips": len(result.trip_requests),
        "compactions": result.compactions,
        "requestsOverWindow": result.over_window,
        "error": result.error,
    }


def summarize(
    turns: int, seed: int, results: Sequence[tuple[Variant, VariantResult]]
) -> dict[str, Any]:
    """The ``--json`` document for ``results`` (the first is the baseline)."""
    off_cost = results[0][1].cost if results else 0.0
    cap = resolve_input_cap(None, MODEL)
    return {
        "benchmark": "attention",
        "measures": MEASURES,
        "turns": turns,
        "seed": seed,
        "model": {
            "name": MODEL["model"],
            "contextWindow": WINDOW,
            "inputCap": cap,
            "gateTrigger": int(TRIGGER_RATIO * cap),
        },
        "pricing": {
            "cacheRead": CACHE_READ,
            "cacheWrite": CACHE_WRITE,
            "unit": "base input tokens",
        },
        "baseline": results[0][0].name if results else None,
        "variants": [_variant_json(v, r, off_cost) for v, r in results],
    }


async def run_scenario(
    turns: int,
    seed: int,
    *,
    variants: Sequence[Variant] = VARIANTS,
    on_variant: Callable[[Variant, VariantResult], None] = lambda variant, result: None,
) -> dict[str, Any]:
    """Run the ``turns``-turn session of ``seed`` once per variant and return
    the summary. ``on_variant`` hears about each variant as it finishes."""
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    fixture = Fixture("a", f"growing coding session: {turns} turns", coding_turns(seed, turns))
    results: list[tuple[Variant, VariantResult]] = []
    for variant in variants:
        result = await run_variant(
            fixture,
            VariantResult(variant.name, kind="baseline" if variant.attention is None else "prism"),
            variant.attention,
            compaction=variant.compaction,
        )
        results.append((variant, result))
        on_variant(variant, result)
    return summarize(turns, seed, results)
