"""The attention examples run as docs/attention.md shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_attention_demo_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "attention_demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "attention_compiled:" in out
    assert re.search(
        r"Tool result read_file \[call_1\]: omitted \d+ bytes \(sha256 [0-9a-f]{32}\)", out
    )
    assert "session store: 5 full tool results kept" in out


def test_attention_persist_demo_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "attention_persist_demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "session file: 1 frontier checkpoint(s)" in done.stdout
    assert "after the restart: first request has 1 stubbed results" in done.stdout
    assert "cached prefix kept across the restart: True" in done.stdout
