from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_openai_compatible_mock_example_runs_and_redacts_the_key() -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_compatible_mock.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "tool call: {'id': 'call_1', 'name': 'weather', 'arguments': {'city': 'Oslo'}}",
        "text: Let me check the weather.",
        "stop: tool_calls usage: {'inputTokens': 1200, 'outputTokens': 40, "
        "'totalTokens': 1240, 'cacheReadTokens': 1000}",
        "cost: $0.000244",
        "error: 429 3000 openai: HTTP 429: Rate limit reached for key [REDACTED]",
    ]
    assert "sk-example" not in completed.stdout + completed.stderr
