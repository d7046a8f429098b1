"""pytest gates: one parametrized test per case, and a suite-level check."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.evals.agents import QaModel, qa_agent

from prism.evals import (
    Case,
    Contains,
    Dataset,
    DatasetError,
    Equals,
    EvalGateError,
    assert_case_passes,
    load_dataset,
    parametrize_cases,
    run_eval_sync,
)

QA = Dataset(
    (
        Case("france", "Capital of France?", expected="Paris", evaluators=(Equals(),)),
        Case("japan", "Capital of Japan?", evaluators=(Contains("Tokyo"),)),
    ),
    name="qa",
)


@parametrize_cases(QA)
def test_each_case_is_its_own_test(case: Case, request: pytest.FixtureRequest) -> None:
    assert request.node.callspec.id == case.name
    report = assert_case_passes(case, qa_agent())
    assert report.pass_rate == 1.0


def test_a_failing_case_fails_the_test_with_the_reason() -> None:
    agent = qa_agent(QaModel(wrong=frozenset({"france"})))
    with pytest.raises(AssertionError, match="expected 'Paris', got 'Lyon'") as caught:
        assert_case_passes(QA.cases[0], agent, repeats=2)
    assert isinstance(caught.value, EvalGateError)


def test_a_dataset_with_broken_rows_fails_at_collection(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text('{"input": "Capital of France?"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"qa\.jsonl:2: not valid JSON"):
        parametrize_cases(load_dataset(path))


def test_a_suite_gate_also_fails_on_rows_left_out(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text('{"input": "Capital of France?"}\n{oops\n', encoding="utf-8")
    report = run_eval_sync(load_dataset(path), qa_agent())
    assert report.pass_rate == 1.0 and len(report.runs) == 1
    with pytest.raises(EvalGateError, match=r"1 dataset row\(s\) failed\n  dataset row left out: "):
        report.check()
