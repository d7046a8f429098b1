"""examples/coding_loop.py runs as docs/coding.md shows: two tasks on a
scratch git repository, real edits, real pytest checks, real commits."""

from __future__ import annotations

import shutil

import pytest
from example_runner import run_example


def test_coding_loop_runs() -> None:
    if shutil.which("git") is None:
        pytest.fail("git is not installed; .ci/install-coding-tools installs it")
    out = run_example("coding_loop.py").stdout
    assert "task: 'Fix add in calc.py.' -> add is fixed and committed." in out
    assert "test_calc.py (edited), calc.py (edited)" in out
    assert "files changed: ['calc.py', 'test_calc.py']" in out
    assert "test runs: [0, 0]" in out
    assert "approver asked: ['git log --oneline']" in out
    assert "git log: ['Add', 'mul', 'Fix', 'add', 'start']" in out
