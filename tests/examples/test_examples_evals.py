from __future__ import annotations

from example_runner import run_example


def test_evals_example() -> None:
    assert run_example("evals.py").stdout.splitlines() == [
        "left out: ['line 3: not valid JSON']",
        "pass rate: 1.0 {'weather-oslo': 1.0, 'france': 1.0, 'japan': 1.0}",
        "evaluators: {'concise': 1.0, 'contains': 1.0, 'equals': 1.0, 'judge': 1.0,"
        " 'tool_calls': 1.0}",
        "tool calls: [{'name': 'weather', 'arguments': {'city': 'Oslo'}}]",
        "judge verdict: on topic",
        "cost per run: 0.00162",
        "session kept: True",
        "regressions: ['france: 100% -> 0% (equals)']",
        "html has plots: True no script: True",
    ]
