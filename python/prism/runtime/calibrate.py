"""The runtime's token-calibration hook.

An agent built with ``token_calibration=`` learns, after every provider turn,
how many input tokens the provider billed for the request as sent, and emits
one ``tokens_calibrated`` event. :func:`token_scale` is what the budget
decisions read: the attention gate (its frontier's ``token_scale``), the
``input_ratio`` compaction trigger, and the strategies through
``CompactionContext.token_scale`` (the LLM cut point, observational
memory's thresholds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prism.attention.calibration import model_key, split_request_tokens
from prism.contracts import ProviderRequest, Usage
from prism.runtime.context import RunPort, RunSettings

__all__ = ["learn_from_turn", "token_scale"]


def token_scale(settings: RunSettings, model: Mapping[str, Any]) -> float:
    """Billed per estimated tokens for ``model``; 1.0 without a calibration."""
    calibration = settings.config.token_calibration
    return 1.0 if calibration is None else calibration.scale(model_key(model))


def learn_from_turn(
    settings: RunSettings, port: RunPort, request: ProviderRequest, usage: Usage
) -> None:
    """Teach the agent's calibration one completed turn (a turn without
    reported input tokens teaches nothing) and pass the new scale on."""
    calibration = settings.config.token_calibration
    reported = usage.get("inputTokens") if usage else None
    if calibration is None or not isinstance(reported, int) or isinstance(reported, bool):
        return
    key = model_key(request["model"])
    split = split_request_tokens(request)
    calibration.observe(key, split, reported)
    scale = calibration.scale(key)
    frontier = port.frontier
    if frontier is not None:
        frontier.token_scale = scale
    snapshot = calibration.snapshot(key)
    port.emit(
        {
            "type": "tokens_calibrated",
            "model": key,
            "turns": snapshot["turns"],
            "ratios": snapshot["ratios"],
            "scale": round(scale, 4),
            "estimatedTokens": split.total,
            "reportedTokens": reported,
        }
    )
