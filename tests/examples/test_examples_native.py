from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_native_core_example() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "native_core.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "json_length: 169 == 169"
    assert lines[1] == "message tokens: 18"
    assert lines[3] == "redacted: {'env': 'KEY=[REDACTED] done'}"
    assert lines[4] == "entries: ['e1']"
    assert lines[5] == "line 2: missing field 'label'"
    assert lines[6].endswith("(torn last line: no trailing newline)")
    assert lines[7].endswith("at $.messages[0].content[0].arguments.when")
