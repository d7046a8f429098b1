from __future__ import annotations

from example_runner import run_example


def test_inspect_report_example() -> None:
    assert run_example("inspect_report.py").stdout.splitlines() == [
        "turns: 2 busts: 0",
        "steps: ['input', 'checkpoint', 'turn', 'tool', 'turn', 'checkpoint']",
        "report is self-contained: True",
        "without the token: 401",
        "sessions: ['weather']",
    ]
