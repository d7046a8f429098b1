"""examples/error_handling.py runs as docs/errors.md shows."""

from __future__ import annotations

from example_runner import run_example


def test_error_handling_catches_each_group() -> None:
    out = run_example("error_handling.py").stdout.splitlines()
    assert out == [
        "run failed: ProviderError code=overloaded",
        "run failed: MaxToolRoundsError code=max_tool_rounds",
        "session state: NoActiveRunError code=no_active_run",
        "bad option: code=invalid_config",
    ]
