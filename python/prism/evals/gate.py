"""pytest integration: gate CI on an eval.

Either one test for the whole suite (``report.check(min_pass_rate=...)``
raises an ``AssertionError`` listing the failing cases), or one test per
case with :func:`parametrize_cases` so each case shows up, and fails, on
its own in pytest's output::

    @parametrize_cases(load_dataset("evals/qa.jsonl"))
    def test_qa(case: Case) -> None:
        assert_case_passes(case, build_agent())

pytest is imported only when these are called; ``import prism.evals``
never needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prism.evals.case import Case, Evaluator
from prism.evals.dataset import Dataset
from prism.evals.errors import DatasetError
from prism.evals.report import EvalReport
from prism.evals.runner import run_eval_sync

__all__ = ["assert_case_passes", "parametrize_cases"]

_F = TypeVar("_F", bound=Callable[..., Any])


def parametrize_cases(dataset: Dataset, *, argname: str = "case") -> Callable[[_F], _F]:
    """``pytest.mark.parametrize`` over the dataset's cases, one test id per
    case name. A dataset with rows left out raises ``DatasetError`` at
    collection (naming each file and line), so a broken row fails CI
    instead of silently shrinking the suite."""
    import pytest

    if dataset.problems:
        listed = "; ".join(str(problem) for problem in dataset.problems)
        raise DatasetError(f"dataset {dataset.name!r} has rows that do not load: {listed}")
    params = [pytest.param(case, id=case.name) for case in dataset.cases]
    mark: Callable[[_F], _F] = pytest.mark.parametrize(argname, params)
    return mark


def assert_case_passes(
    case: Case,
    agent: Any,
    *,
    evaluators: Sequence[Evaluator] = (),
    min_pass_rate: float = 1.0,
    **options: Any,
) -> EvalReport:
    """Run one case (``options`` as for ``run_eval``, e.g. ``repeats``) and
    raise ``EvalGateError`` (an ``AssertionError``) below ``min_pass_rate``."""
    report = run_eval_sync([case], agent, evaluators=evaluators, progress=False, **options)
    report.check(min_pass_rate)
    return report
