"""What one compiled turn did, as counts only (never text or payloads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prism.contracts import AttentionCompiledEvent
from prism.errors import AttentionBudgetError


@dataclass(frozen=True, slots=True)
class AttentionReport:
    """``used`` -> ``used_after`` is the turn's estimated input-token curve.

    Rows re-applied from the sticky frontier count again. ``truncated`` is
    true when the gate stopped with eligible rows left (the frontier is
    partial: the request fit before every candidate was shrunk).
    """

    used: int
    used_after: int
    input_cap: int
    trigger_ratio: float
    dropped_thinking_turns: int = 0
    stubbed_tool_results: int = 0
    stubbed_bytes: int = 0
    truncated: bool = False
    run_id: str | None = None
    session_id: str | None = None
    turn: int | None = None
    token_scale: float = 1.0
    """Billed tokens per estimated token the gate's cap was divided by (a
    calibrated session, see prism.attention.calibration); 1.0 otherwise."""

    def to_json(self) -> dict[str, Any]:
        """The report's camelCase counts (the event without its ``type``)."""
        out: dict[str, Any] = dict(self.to_event())
        del out["type"]
        return out

    def to_event(self) -> AttentionCompiledEvent:
        """The ``attention_compiled`` agent event: ids and counts only."""
        out: AttentionCompiledEvent = {
            "type": "attention_compiled",
            "used": self.used,
            "usedAfter": self.used_after,
            "inputCap": self.input_cap,
            "triggerRatio": self.trigger_ratio,
            "droppedThinkingTurns": self.dropped_thinking_turns,
            "stubbedToolResults": self.stubbed_tool_results,
            "stubbedBytes": self.stubbed_bytes,
            "truncated": self.truncated,
        }
        if self.token_scale != 1.0:
            out["tokenScale"] = round(self.token_scale, 4)
        if self.session_id is not None:
            out["sessionId"] = self.session_id
        if self.run_id is not None:
            out["runId"] = self.run_id
        return out


def is_attention_budget_error(error: object) -> bool:
    """True for :class:`AttentionBudgetError` (the host should compact)."""
    return isinstance(error, AttentionBudgetError)
