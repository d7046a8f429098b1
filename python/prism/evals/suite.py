"""An eval suite: a dataset, the agent under test and how to grade it, in one
object a module can expose for ``prism eval run module:suite`` (or return
from a factory)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.evals.case import Case, Evaluator
from prism.evals.dataset import Dataset
from prism.evals.report import EvalReport
from prism.evals.runner import Pricing, run_eval

__all__ = ["EvalSuite"]


@dataclass(frozen=True, slots=True)
class EvalSuite:
    """What ``run_eval`` takes, kept together: ``agent`` (the agent under
    test), ``evaluators`` for every case, a ``judge`` (an Agent) for cases
    with a rubric, ``pricing`` and per-run ``run_options`` (e.g.
    ``output_type``). ``defaults`` are run_eval keywords (concurrency,
    repeats, ...) that the command line may override."""

    dataset: Dataset | Sequence[Case]
    agent: Any
    evaluators: Sequence[Evaluator] = ()
    judge: Any = None
    pricing: Pricing | None = None
    run_options: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None

    async def run(self, **overrides: Any) -> EvalReport:
        """Run the suite; ``overrides`` win over ``defaults``."""
        options = {**self.defaults, **overrides}
        return await run_eval(
            self.dataset,
            self.agent,
            evaluators=self.evaluators,
            judge=self.judge,
            pricing=self.pricing,
            run_options=self.run_options,
            name=options.pop("name", self.name),
            **options,
        )
