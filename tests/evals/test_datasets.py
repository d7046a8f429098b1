"""Datasets from code, JSONL and YAML: a bad row is reported with its file and
line while the other rows still load; a file that cannot be read raises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from prism.evals import (
    Case,
    Contains,
    Dataset,
    DatasetError,
    Regex,
    ToolCalls,
    evaluator_from_spec,
    load_dataset,
)


def test_jsonl_rows_load_and_bad_rows_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    rows = [
        json.dumps(
            {"name": "france", "input": "Capital of France?", "expected": "Paris", "timeout_s": 5}
        ),
        "",
        '{"name": "broken", "input": ',
        json.dumps(
            {"input": "Capital of Japan?", "assert": [{"type": "contains", "value": "Tokyo"}]}
        ),
        json.dumps({"name": "nope", "input": "x", "assert": [{"type": "telepathy"}]}),
        json.dumps({"name": "noinput", "expected": "y"}),
        json.dumps({"name": "france", "input": "dup"}),
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    dataset = load_dataset(path)
    assert dataset.name == "qa"
    assert [c.name for c in dataset.cases] == ["france", "qa-4"]
    assert dataset.cases[1].source == f"{path}:4"
    assert dataset.cases[0].timeout_s == 5
    assert isinstance(dataset.cases[1].evaluators[0], Contains)
    assert [(p.file, p.line) for p in dataset.problems] == [
        (str(path), 3),
        (str(path), 5),
        (str(path), 6),
        (str(path), 7),
    ]
    messages = [p.message for p in dataset.problems]
    assert "not valid JSON" in messages[0]
    assert "unknown assertion type 'telepathy'" in messages[1]
    assert "no 'input'" in messages[2]
    assert "already named 'france'" in messages[3]


YAML = """\
cases:
  - name: france
    input: Capital of France?
    expected: Paris
    assert:
      - {type: regex, value: "^Paris$"}
  - name: bad-regex
    input: x
    assert:
      - {type: regex, value: "("}
  - name: weather
    input: weather in Oslo
    rubric: Says the weather.
    assert:
      - type: tool_calls
        value: [{name: weather, arguments: {city: Oslo}}]
        order: exact
  - just a string
"""


def test_yaml_rows_carry_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(YAML, encoding="utf-8")
    dataset = load_dataset(path)
    assert [c.name for c in dataset.cases] == ["france", "weather"]
    assert isinstance(dataset.cases[0].evaluators[0], Regex)
    assert isinstance(dataset.cases[1].evaluators[0], ToolCalls)
    assert dataset.cases[1].rubric == "Says the weather."
    assert dataset.cases[1].source == f"{path}:11"
    assert [(p.line, p.message.split(":")[0]) for p in dataset.problems] == [
        (7, "regex"),
        (18, "a row must be an object, got str"),
    ]


def test_a_yaml_file_that_does_not_parse_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text("- input: a\n- input: [unclosed\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"broken\.yml:3: not valid YAML"):
        load_dataset(path)
    path.write_text("just: a mapping\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="a list of rows"):
        load_dataset(path)


def test_files_that_cannot_be_datasets_raise(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"\.jsonl, \.yaml or \.yml"):
        load_dataset(tmp_path / "cases.csv")
    with pytest.raises(DatasetError, match="cannot read the dataset"):
        load_dataset(tmp_path / "missing.jsonl")


def test_cases_in_code_are_validated() -> None:
    with pytest.raises(DatasetError, match="input is empty"):
        Case("a", "  ")
    with pytest.raises(DatasetError, match="input must be a string"):
        Case("a", 42)
    with pytest.raises(DatasetError, match="case name"):
        Case("", "hi")
    with pytest.raises(DatasetError, match="is not an Evaluator"):
        Case("a", "hi", evaluators=(lambda ctx: True,))  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="timeout_s must be a number > 0"):
        Case("a", "hi", timeout_s=0)
    with pytest.raises(DatasetError, match="two cases are named 'a'"):
        Dataset((Case("a", "hi"), Case("a", "ho")))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("contains", "must be an object with a 'type'"),
        ({"type": "regex"}, "needs 'value'"),
        ({"type": "tool_calls", "value": [1]}, "each call is a name"),
        ({"type": "tool_calls", "value": ["a"], "order": "random"}, "order must be one of"),
        ({"type": "cost"}, "give max_cost or"),
        ({"type": "latency", "max_seconds": 0}, "max_seconds must be > 0"),
        ({"type": "json_schema", "value": {"type": "nonsense"}}, "invalid schema"),
    ],
)
def test_bad_assertion_specs_say_what_is_wrong(spec: object, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        evaluator_from_spec(spec)


def test_yaml_without_pyyaml_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(YAML, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml -> ImportError
    with pytest.raises(DatasetError, match=r"pip install 'prism-harness\[evals\]'"):
        load_dataset(path)
