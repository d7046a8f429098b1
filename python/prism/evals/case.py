"""A case, what an evaluator sees of its run, and what an evaluator returns.

The shapes follow pydantic-evals and inspect-ai: a case is an input with an
optional expected output, a rubric for a judge, metadata, and its own
evaluators; an evaluator reads an :class:`EvalContext` and returns an
:class:`EvaluatorResult` that passes, fails, or could not decide (``error``:
a judge that answered garbage is an error, never a pass).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.contracts import Message, Usage
from prism.evals.errors import DatasetError

__all__ = ["Case", "EvalContext", "Evaluator", "EvaluatorResult", "Status"]

Status = Literal["pass", "fail", "error"]
_NAME = re.compile(r"[\w.:\- ]{1,200}")


@dataclass(frozen=True, slots=True)
class Case:
    """One input to run the agent on.

    ``input`` is what ``session.run`` takes (a string, a message dict or a
    list of them). ``expected`` is the expected output that evaluators built
    without a value of their own compare against; ``rubric`` is what an
    :class:`~prism.evals.LlmJudge` without a rubric of its own grades by.
    ``evaluators`` apply to this case only, on top of the suite's.
    ``source`` says where the case came from (``file:line``); ``timeout_s``
    replaces the run's per-case timeout for this case."""

    name: str
    input: Any
    expected: Any = None
    rubric: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    evaluators: tuple[Evaluator, ...] = ()
    source: str | None = None
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise DatasetError(
                f"case name must be 1-200 letters, digits, spaces or ._:- (got {self.name!r})"
            )
        if not (isinstance(self.input, str | dict) or _is_message_list(self.input)):
            raise DatasetError(
                f"case {self.name!r}: input must be a string, a message dict or a list of them"
            )
        if isinstance(self.input, str) and not self.input.strip():
            raise DatasetError(f"case {self.name!r}: input is empty")
        if self.rubric is not None and (not isinstance(self.rubric, str) or not self.rubric):
            raise DatasetError(f"case {self.name!r}: rubric must be a non-empty string")
        if not isinstance(self.metadata, Mapping):
            raise DatasetError(f"case {self.name!r}: metadata must be a mapping")
        if self.timeout_s is not None and (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, int | float)
            or not self.timeout_s > 0
        ):
            raise DatasetError(f"case {self.name!r}: timeout_s must be a number > 0")
        bad = [e for e in self.evaluators if not isinstance(e, Evaluator)]
        if bad:
            raise DatasetError(
                f"case {self.name!r}: {type(bad[0]).__name__} is not an Evaluator "
                "(subclass prism.evals.Evaluator or decorate a function with @evaluator)"
            )
        object.__setattr__(self, "evaluators", tuple(self.evaluators))


def _is_message_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value)


@dataclass(slots=True)
class EvalContext:
    """One run of one case, as evaluators see it. ``output`` is the final
    assistant text, ``value`` the structured output when the run had an
    ``output_type``; ``tool_calls`` are ``{"name", "arguments"}`` in the
    order the model asked for them; ``cost`` needs the runner's pricing."""

    case: Case
    output: str
    value: Any
    messages: Sequence[Message]
    tool_calls: Sequence[Mapping[str, Any]]
    usage: Usage
    latency_s: float
    cost: float | None
    session_id: str


@dataclass(frozen=True, slots=True)
class EvaluatorResult:
    """``status`` is pass, fail or error (could not decide); ``score`` an
    optional number in [0, 1]; ``details`` anything worth keeping in the
    report (a judge's prompt and raw verdict)."""

    name: str
    status: Status
    reason: str = ""
    score: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status, "reason": self.reason}
        if self.score is not None:
            out["score"] = self.score
        if self.details:
            out["details"] = dict(self.details)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvaluatorResult:
        return cls(
            name=str(data["name"]),
            status=data["status"],
            reason=str(data.get("reason", "")),
            score=data.get("score"),
            details=dict(data.get("details") or {}),
        )


class Evaluator(abc.ABC):
    """Grades one run of a case. Subclasses set ``name`` (how the report
    labels it) and implement ``evaluate``; an exception inside ``evaluate``
    is recorded as an ``error`` result, never a pass."""

    name: str = "evaluator"

    @abc.abstractmethod
    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult: ...

    def result(
        self,
        passed: bool,
        reason: str = "",
        *,
        score: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> EvaluatorResult:
        """A pass or fail result under this evaluator's name."""
        return EvaluatorResult(
            self.name, "pass" if passed else "fail", reason, score, details or {}
        )
