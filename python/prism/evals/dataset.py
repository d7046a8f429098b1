"""Datasets: cases built in code, or read from JSONL or YAML files.

A row is an object: ``input`` (required), ``name`` (default: file stem and
line), ``expected``, ``rubric``, ``metadata``, ``timeout_s`` and ``assert`` (a list of
evaluator specs, see ``evaluator_from_spec``). A row that does not parse or
is not a valid case becomes a :class:`DatasetProblem` naming its file and
line; the other rows still load and run. Only a file that cannot be read at
all (missing, unknown extension, YAML that does not parse) raises.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prism.evals.case import Case
from prism.evals.errors import DatasetError
from prism.evals.evaluators import evaluator_from_spec

__all__ = ["Dataset", "DatasetProblem", "load_dataset"]

_ROW_KEYS = {"name", "input", "expected", "rubric", "metadata", "assert", "timeout_s"}


@dataclass(frozen=True, slots=True)
class DatasetProblem:
    """A row left out of the run, and why."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass(frozen=True, slots=True)
class Dataset:
    """Named cases (names are unique) plus the rows that could not load."""

    cases: tuple[Case, ...]
    name: str = "dataset"
    problems: tuple[DatasetProblem, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "cases", tuple(self.cases))
        seen: set[str] = set()
        for case in self.cases:
            if not isinstance(case, Case):
                raise DatasetError(f"dataset {self.name!r}: {case!r} is not a Case")
            if case.name in seen:
                raise DatasetError(f"dataset {self.name!r}: two cases are named {case.name!r}")
            seen.add(case.name)

    def __len__(self) -> int:
        return len(self.cases)


def case_from_row(row: Any, *, default_name: str, source: str) -> Case:
    """One case from a row of a dataset file; ``DatasetError`` says what is wrong."""
    if not isinstance(row, Mapping):
        raise DatasetError(f"a row must be an object, got {type(row).__name__}")
    unknown = sorted(set(row) - _ROW_KEYS)
    if unknown:
        raise DatasetError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_ROW_KEYS))})")
    if "input" not in row:
        raise DatasetError("the row has no 'input'")
    specs = row.get("assert") or []
    if not isinstance(specs, list):
        raise DatasetError("'assert' must be a list of assertions")
    return Case(
        name=str(row.get("name") or default_name),
        input=row["input"],
        expected=row.get("expected"),
        rubric=row.get("rubric"),
        metadata=row.get("metadata") or {},
        evaluators=tuple(evaluator_from_spec(spec) for spec in specs),
        source=source,
        timeout_s=row.get("timeout_s"),
    )


def _rows_to_dataset(
    name: str, file: str, rows: Iterable[tuple[int, Any]], problems: list[DatasetProblem]
) -> Dataset:
    cases: list[Case] = []
    names: set[str] = set()
    stem = Path(file).stem
    for line, row in rows:
        try:
            case = case_from_row(row, default_name=f"{stem}-{line}", source=f"{file}:{line}")
            if case.name in names:
                raise DatasetError(f"another row is already named {case.name!r}")
        except DatasetError as error:
            problems.append(DatasetProblem(file, line, str(error)))
            continue
        names.add(case.name)
        cases.append(case)
    ordered = tuple(sorted(problems, key=lambda p: p.line))
    return Dataset(tuple(cases), name=name, problems=ordered)


def _jsonl_rows(text: str, file: str, problems: list[DatasetProblem]) -> list[tuple[int, Any]]:
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except ValueError as error:
            problems.append(DatasetProblem(file, number, f"not valid JSON: {error}"))
    return rows


def _yaml_rows(text: str, file: str, problems: list[DatasetProblem]) -> list[tuple[int, Any]]:
    try:
        import yaml
    except ImportError:
        raise DatasetError(
            f"{file}: reading YAML needs PyYAML: pip install 'prism-harness[evals]'"
        ) from None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None and isinstance(root, yaml.MappingNode):
            cases = [v for k, v in root.value if getattr(k, "value", None) == "cases"]
            root = cases[0] if cases else None
        if root is None or not isinstance(root, yaml.SequenceNode):
            raise DatasetError(f"{file}: a YAML dataset is a list of rows (or a 'cases:' list)")
        rows: list[tuple[int, Any]] = []
        for node in root.value:
            line = node.start_mark.line + 1
            try:
                rows.append((line, loader.construct_object(node, deep=True)))
            except yaml.YAMLError as error:
                problems.append(DatasetProblem(file, line, f"not valid YAML: {error}"))
        return rows
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        line = mark.line + 1 if mark is not None else 0
        raise DatasetError(f"{file}:{line}: not valid YAML: {error.problem}") from None
    finally:
        loader.dispose()


def load_dataset(path: str | os.PathLike[str], *, name: str | None = None) -> Dataset:
    """Read a ``.jsonl``, ``.yaml`` or ``.yml`` dataset. Rows that fail are
    in ``dataset.problems`` (file and line); the rest are ``dataset.cases``."""
    file = os.fspath(path)
    suffix = Path(file).suffix.lower()
    if suffix not in {".jsonl", ".yaml", ".yml"}:
        raise DatasetError(f"{file}: a dataset file ends in .jsonl, .yaml or .yml")
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"{file}: cannot read the dataset: {error}") from None
    problems: list[DatasetProblem] = []
    reader = _jsonl_rows if suffix == ".jsonl" else _yaml_rows
    rows = reader(text, file, problems)
    return _rows_to_dataset(name or Path(file).stem, file, rows, problems)
