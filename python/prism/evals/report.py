"""What a run produced: one :class:`CaseRun` per case and repeat, the rows
the dataset left out, and summaries (pass rate per case and evaluator,
cost, latency). ``to_json``/``read_report`` are the machine form that
``prism eval compare`` and CI read; the JSON keys are camelCase like every
Prism wire shape.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prism._json_fields import write_json_fields
from prism.evals.case import EvaluatorResult, Status
from prism.evals.dataset import DatasetProblem
from prism.evals.errors import EvalError, EvalGateError

__all__ = ["REPORT_VERSION", "CaseRun", "EvalReport", "read_report"]

REPORT_VERSION = 1


@dataclass(slots=True)
class CaseRun:
    """One repeat of one case. ``status`` is ``error`` when the agent run
    failed (``error`` says how) or an evaluator could not decide; else
    ``fail`` when any evaluator failed, else ``pass``."""

    case: str
    repeat: int
    status: Status
    session_id: str | None
    input: Any
    expected: Any = None
    output: str = ""
    latency_s: float = 0.0
    usage: Mapping[str, Any] = field(default_factory=dict)
    cost: float | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    evaluators: Sequence[EvaluatorResult] = ()
    error: str | None = None
    attempts: int = 1
    messages: Sequence[Mapping[str, Any]] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **write_json_fields(
                self, "case", "repeat", "status", "session_id", "input", "expected", "output"
            ),
            "latencyMs": round(self.latency_s * 1000, 3),
            "usage": dict(self.usage),
            "cost": self.cost,
            "toolCalls": [dict(c) for c in self.tool_calls],
            "evaluators": [e.to_json() for e in self.evaluators],
            **write_json_fields(self, "error", "attempts"),
            "messages": [dict(m) for m in self.messages],
            "metadata": dict(self.metadata),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseRun:
        return cls(
            case=str(data["case"]),
            repeat=int(data.get("repeat", 0)),
            status=data["status"],
            session_id=data.get("sessionId"),
            input=data.get("input"),
            expected=data.get("expected"),
            output=str(data.get("output", "")),
            latency_s=round(float(data.get("latencyMs", 0)) / 1000, 6),
            usage=dict(data.get("usage") or {}),
            cost=data.get("cost"),
            tool_calls=list(data.get("toolCalls") or []),
            evaluators=[EvaluatorResult.from_json(e) for e in data.get("evaluators") or []],
            error=data.get("error"),
            attempts=int(data.get("attempts", 1)),
            messages=list(data.get("messages") or []),
            metadata=dict(data.get("metadata") or {}),
            source=data.get("source"),
        )


def _rate(statuses: Sequence[str]) -> float:
    return sum(1 for s in statuses if s == "pass") / len(statuses) if statuses else 0.0


@dataclass(slots=True)
class EvalReport:
    """Everything one eval run produced. ``store`` names where the cases'
    sessions live (a path ``prism inspect`` opens), when it is a file."""

    name: str
    runs: list[CaseRun]
    problems: list[DatasetProblem] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    duration_s: float = 0.0
    store: str | None = None

    @property
    def pass_rate(self) -> float:
        """Passed runs over all runs (every repeat counts)."""
        return _rate([r.status for r in self.runs])

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "error": 0}
        for run in self.runs:
            out[run.status] += 1
        return out

    def case_pass_rates(self) -> dict[str, float]:
        by_case: dict[str, list[str]] = defaultdict(list)
        for run in self.runs:
            by_case[run.case].append(run.status)
        return {case: _rate(statuses) for case, statuses in by_case.items()}

    def evaluator_pass_rates(self) -> dict[str, float]:
        by_name: dict[str, list[str]] = defaultdict(list)
        for run in self.runs:
            for result in run.evaluators:
                by_name[result.name].append(result.status)
        return {name: _rate(statuses) for name, statuses in sorted(by_name.items())}

    def failures(self) -> list[CaseRun]:
        return [run for run in self.runs if run.status != "pass"]

    def summary(self) -> dict[str, Any]:
        latencies = sorted(r.latency_s * 1000 for r in self.runs)
        costs = [r.cost for r in self.runs if r.cost is not None]
        return {
            "runs": len(self.runs),
            "cases": len(self.case_pass_rates()),
            **self.counts(),
            "passRate": self.pass_rate,
            "evaluatorPassRates": self.evaluator_pass_rates(),
            "latencyMsMedian": statistics.median(latencies) if latencies else None,
            "latencyMsMax": latencies[-1] if latencies else None,
            "totalCost": sum(costs) if costs else None,
            "problems": len(self.problems),
        }

    def check(self, min_pass_rate: float = 1.0) -> None:
        """Raise :class:`EvalGateError` (an ``AssertionError``) when the pass
        rate is below ``min_pass_rate`` or a dataset row failed to load:
        ``report.check()`` in a pytest test gates CI on the eval."""
        lines: list[str] = []
        if self.pass_rate < min_pass_rate:
            lines.append(
                f"eval {self.name!r}: pass rate {self.pass_rate:.1%} is below {min_pass_rate:.1%}"
            )
            for run in self.failures()[:20]:
                why = run.error or "; ".join(
                    f"{e.name}: {e.reason}" for e in run.evaluators if e.status != "pass"
                )
                lines.append(f"  {run.case} #{run.repeat} {run.status}: {why}")
        lines += [f"  dataset row left out: {problem}" for problem in self.problems]
        if lines:
            if not lines[0].startswith("eval"):
                lines.insert(0, f"eval {self.name!r}: {len(self.problems)} dataset row(s) failed")
            raise EvalGateError("\n".join(lines))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "name": self.name,
            "startedAt": self.started_at,
            "durationMs": round(self.duration_s * 1000, 3),
            "store": self.store,
            "config": dict(self.config),
            "summary": self.summary(),
            "problems": [p.to_json() for p in self.problems],
            "runs": [r.to_json() for r in self.runs],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvalReport:
        if not isinstance(data, Mapping) or data.get("version") != REPORT_VERSION:
            raise EvalError(f"not a prism eval report (version {REPORT_VERSION})")
        try:
            return cls(
                name=str(data["name"]),
                runs=[CaseRun.from_json(r) for r in data["runs"]],
                problems=[DatasetProblem(**p) for p in data.get("problems") or []],
                config=dict(data.get("config") or {}),
                started_at=str(data.get("startedAt", "")),
                duration_s=round(float(data.get("durationMs", 0)) / 1000, 6),
                store=data.get("store"),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise EvalError(f"a malformed eval report: {type(error).__name__}: {error}") from None

    def write_json(self, path: str | os.PathLike[str]) -> None:
        """Write the report atomically (a reader never sees half a file)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(json.dumps(self.to_json(), indent=1, default=str), encoding="utf-8")
        os.replace(partial, target)


def read_report(path: str | os.PathLike[str]) -> EvalReport:
    """Read a report written by ``write_json``; ``EvalError`` names the file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise EvalError(f"{os.fspath(path)}: cannot read the eval report: {error}") from None
    try:
        return EvalReport.from_json(data)
    except EvalError as error:
        raise EvalError(f"{os.fspath(path)}: {error}") from None
