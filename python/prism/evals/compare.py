"""``prism eval compare A.json B.json``: which cases got worse, which got
better. A case regresses when its pass rate drops (by more than
``tolerance``); the change names the evaluators that newly fail."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from prism._json_fields import write_json_fields
from prism.evals.report import EvalReport

__all__ = ["CaseChange", "Comparison", "compare_reports"]


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case's pass rate before and after, and the evaluators whose pass
    rate moved the same way."""

    case: str
    before: float
    after: float
    evaluators: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            **write_json_fields(self, "case", "before", "after"),
            "evaluators": list(self.evaluators),
        }

    def __str__(self) -> str:
        which = f" ({', '.join(self.evaluators)})" if self.evaluators else ""
        return f"{self.case}: {self.before:.0%} -> {self.after:.0%}{which}"


@dataclass(frozen=True, slots=True)
class Comparison:
    base: str
    head: str
    base_pass_rate: float
    head_pass_rate: float
    regressions: tuple[CaseChange, ...] = ()
    improvements: tuple[CaseChange, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    def to_json(self) -> dict[str, Any]:
        return {
            **write_json_fields(self, "base", "head", "base_pass_rate", "head_pass_rate"),
            "regressions": [c.to_json() for c in self.regressions],
            "improvements": [c.to_json() for c in self.improvements],
            "added": list(self.added),
            "removed": list(self.removed),
            "unchanged": self.unchanged,
        }

    def format(self) -> str:
        """A plain-text summary, one line per change."""
        lines = [
            f"pass rate: {self.base_pass_rate:.1%} ({self.base}) -> "
            f"{self.head_pass_rate:.1%} ({self.head})",
            f"regressions: {len(self.regressions)}",
            *(f"  - {change}" for change in self.regressions),
            f"improvements: {len(self.improvements)}",
            *(f"  + {change}" for change in self.improvements),
        ]
        if self.added:
            lines.append(f"new cases: {', '.join(self.added)}")
        if self.removed:
            lines.append(f"cases no longer run: {', '.join(self.removed)}")
        lines.append(f"unchanged: {self.unchanged}")
        return "\n".join(lines)


def _evaluator_rates(report: EvalReport) -> dict[str, dict[str, float]]:
    """case -> evaluator -> pass rate."""
    statuses: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for run in report.runs:
        for result in run.evaluators:
            statuses[run.case][result.name].append(result.status == "pass")
    return {
        case: {name: sum(v) / len(v) for name, v in by_name.items()}
        for case, by_name in statuses.items()
    }


def compare_reports(base: EvalReport, head: EvalReport, *, tolerance: float = 0.0) -> Comparison:
    """Compare ``head`` against ``base`` case by case (by name)."""
    before, after = base.case_pass_rates(), head.case_pass_rates()
    base_evals, head_evals = _evaluator_rates(base), _evaluator_rates(head)
    regressions: list[CaseChange] = []
    improvements: list[CaseChange] = []
    unchanged = 0
    for case in (c for c in after if c in before):
        delta = after[case] - before[case]
        if abs(delta) <= tolerance:
            unchanged += 1
            continue
        old, new = base_evals.get(case, {}), head_evals.get(case, {})
        moved = tuple(
            sorted(
                name
                for name in set(old) | set(new)
                if (new.get(name, 0.0) - old.get(name, 0.0)) * delta > 0
            )
        )
        change = CaseChange(case, before[case], after[case], moved)
        (regressions if delta < 0 else improvements).append(change)
    return Comparison(
        base=base.name,
        head=head.name,
        base_pass_rate=base.pass_rate,
        head_pass_rate=head.pass_rate,
        regressions=tuple(sorted(regressions, key=lambda c: c.after - c.before)),
        improvements=tuple(sorted(improvements, key=lambda c: c.before - c.after)),
        added=tuple(sorted(set(after) - set(before))),
        removed=tuple(sorted(set(before) - set(after))),
        unchanged=unchanged,
    )
