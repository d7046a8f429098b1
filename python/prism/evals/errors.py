"""The errors of ``prism.evals`` (drawn in prism/errors.py's tree)."""

from __future__ import annotations

from prism.errors import PrismError

__all__ = ["DatasetError", "EvalError", "EvalGateError"]


class EvalError(PrismError):
    """An eval suite could not be loaded, run or reported."""

    code = "eval_error"


class DatasetError(EvalError, ValueError):
    """A dataset file (or a case built in code) is unusable as a whole: the
    file is missing, is not JSONL/YAML, or a case is malformed. A single
    bad row of a file is not raised: it is kept as a ``DatasetProblem``
    with its file and line, and the other rows still run."""

    code = "invalid_dataset"


class EvalGateError(EvalError, AssertionError):
    """An eval run fell below the pass rate a CI gate asked for; the message
    lists the failing cases (an ``AssertionError``, so pytest shows it as a
    test failure)."""

    code = "eval_gate_failed"
