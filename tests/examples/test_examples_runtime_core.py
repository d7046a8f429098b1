"""Run the runtime-core examples exactly as a reader would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    "mock_provider.py": [
        "turn 2: ['content_delta', 'content_delta', 'usage', 'done']",
        "requests recorded: 2",
    ],
    "tools_dispatch.py": [
        "c1 read_file ok",
        "c2 read_file invalid_arguments",
        "c3 read_file tool_not_active",
        "c4 format_disk unknown_tool",
    ],
    "middleware_hooks.py": [
        "{'metadata': {'source': 'demo', 'trace': 't-1'}}",
        "reported: ['provider_request: RuntimeError']",
    ],
    "retry_policy.py": [
        "attempt 3: retry=True delay=300ms (transient)",
        "slept (s): [0.1, 0.2, 0.3]",
    ],
    "prompt_assembly.py": ["Context release-notes:", "tools: ['read']"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    for line in EXPECTED[name]:
        assert line in completed.stdout, f"{name}: missing {line!r} in\n{completed.stdout}"
