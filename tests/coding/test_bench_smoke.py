"""benches/coding_tools.py runs (a small tree, one repeat) and its three
tools agree on the match count: the benchmark measures equal work."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_coding_bench_runs(tmp_path: Path) -> None:
    if shutil.which("rg") is None:
        pytest.fail("ripgrep (rg) is not installed; .ci/install-coding-tools installs it")
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for i in range(20):
        (tree / "pkg" / f"m{i}.py").write_text(f"def on_{i}_callback(x):\n    return x\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benches.coding_tools",
            "--tree",
            str(tree),
            "--repeat",
            "1",
            "--cpu",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"matches rg 20, native 20, walk\+re 20", done.stdout), done.stdout
    assert "read tool" in done.stdout and "shell (CPU time)" in done.stdout
