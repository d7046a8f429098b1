"""``RunResult``: what a finished run returns (``session.run``, the stream's
``result``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prism.contracts import Message, Usage

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What ``session.run`` returns.

    ``messages`` are the messages this run appended (input, assistant, tool
    results, injected steer/follow-up input) in order; ``message``/``text``
    are the final assistant message and its text. ``output`` is the
    validated value of a run given ``output_type`` (else ``None``).
    ``pending_approvals`` lists what a run paused for approval waits on
    (docs/approvals.md); ``paused`` says whether it did.
    """

    session_id: str
    run_id: str
    message: Message | None
    text: str
    messages: list[Message]
    usage: Usage
    stop_reason: str | None
    tool_rounds: int
    leaf_id: str | None
    output: Any = None
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def paused(self) -> bool:
        """The run waits for approval: ``session.resume(decisions=...)``."""
        return bool(self.pending_approvals)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sessionId": self.session_id,
            "runId": self.run_id,
            "text": self.text,
            "message": self.message,
            "usage": dict(self.usage),
            "toolRounds": self.tool_rounds,
            "leafId": self.leaf_id,
        }
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        if self.pending_approvals:
            out["pendingApprovals"] = [dict(a) for a in self.pending_approvals]
        if self.output is not None:
            # A pydantic model or dataclass as JSON data; imported only for
            # runs given output_type (pydantic built their value anyway).
            from pydantic_core import to_jsonable_python

            out["output"] = to_jsonable_python(self.output)
        return out
