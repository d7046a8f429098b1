from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_extension_demo_runs_and_keeps_the_secret_out() -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "extension_demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "config: {'maxWords': 50}",
        "manifest: prism-word-tools 1.0.0 {'tool': ('word_count',), 'command': ('words:stats',)}",
        "event: broken setup could not log in with [REDACTED]",
        "event: untrusted permission extension 'untrusted' is not permitted: "
        "extension is not on the allowlist",
        "loaded: ['word-tools'] failed: ['broken', 'untrusted']",
        "tool result: {'words': 3}",
        "command: word_count ran 1 time(s)",
        "hijacked call: permission_denied",
        "report ok: False",
    ]
    assert "sk-demo" not in completed.stdout + completed.stderr
