"""Runs an example script the way a reader would: a fresh interpreter from the
repo root. Shared by the tests/examples suites (unique module name on purpose)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(
    name: str, *, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env=None if env is None else dict(env),
    )
    assert completed.returncode == 0, completed.stderr
    return completed
