from __future__ import annotations

from example_runner import run_example


def test_telemetry_example_prints_the_span_tree() -> None:
    done = run_example("telemetry.py")
    assert done.stdout.splitlines() == [
        "exported: chat demo",
        "exported: execute_tool add",
        "exported: chat demo",
        "exported: invoke_agent prism",
        "2 + 3 = 5",
        "span tree:",
        "invoke_agent prism  (input tokens: 97)",
        "  chat demo  (input tokens: 42)",
        "  execute_tool add",
        "  chat demo  (input tokens: 55)",
    ]
