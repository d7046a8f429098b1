"""The metric instruments Prism records, created once per instrumentation.

Names follow the OpenTelemetry GenAI conventions where one exists
(``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``); the
rest are ``prism.*``. Durations are in seconds, as the conventions ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.metrics import Meter

# Buckets for second-valued histograms (the GenAI conventions' advice).
_DURATION_BUCKETS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)


def _model_attributes(model: Mapping[str, Any]) -> dict[str, str]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": str(model.get("provider", "")),
        "gen_ai.request.model": str(model.get("model", "")),
    }


class PrismMetrics:
    __slots__ = (
        "_busts",
        "_cached",
        "_compactions",
        "_retries",
        "_tokens",
        "_tool_duration",
        "_trips",
        "_turn_duration",
    )

    def __init__(self, meter: Meter) -> None:
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per provider turn"
        )
        self._cached = meter.create_counter(
            "prism.client.cached_tokens",
            unit="{token}",
            description="Input tokens served from the provider's prompt cache",
        )
        self._turn_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Provider turn latency, retries included",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._tool_duration = meter.create_histogram(
            "prism.tool.duration",
            unit="s",
            description="Tool call latency",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._retries = meter.create_counter(
            "prism.provider.retries", unit="{retry}", description="Provider turn retries"
        )
        self._trips = meter.create_counter(
            "prism.attention.trips", unit="{turn}", description="Turns the attention gate changed"
        )
        self._busts = meter.create_counter(
            "prism.attention.cache_busts",
            unit="{turn}",
            description="Gate trips that rewrote the cached prompt prefix",
        )
        self._compactions = meter.create_counter(
            "prism.compactions", unit="{compaction}", description="Compactions appended"
        )

    def tokens(self, model: Mapping[str, Any], usage: Mapping[str, Any]) -> None:
        attributes = _model_attributes(model)
        for token_type, key in (("input", "inputTokens"), ("output", "outputTokens")):
            if key in usage:
                self._tokens.record(
                    int(usage[key]), {**attributes, "gen_ai.token.type": token_type}
                )
        cached = int(usage.get("cacheReadTokens", 0))
        if cached:
            self._cached.add(cached, attributes)

    def turn_finished(self, model: Mapping[str, Any], seconds: float, error: str | None) -> None:
        attributes = _model_attributes(model)
        if error is not None:
            attributes["error.type"] = error
        self._turn_duration.record(seconds, attributes)

    def tool_finished(self, name: str, seconds: float, *, error: bool) -> None:
        attributes: dict[str, str] = {"gen_ai.tool.name": name}
        if error:
            attributes["error.type"] = "tool_error"
        self._tool_duration.record(seconds, attributes)

    def retry(self, model: Mapping[str, Any]) -> None:
        self._retries.add(1, _model_attributes(model))

    def gate(self, model: Mapping[str, Any], bust: bool) -> None:
        attributes = _model_attributes(model)
        self._trips.add(1, attributes)
        if bust:
            self._busts.add(1, attributes)

    def compaction(self, trigger: str) -> None:
        self._compactions.add(1, {"prism.compaction.trigger": trigger})
