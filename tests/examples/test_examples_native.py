from __future__ import annotations

from example_runner import run_example


def test_native_core_example() -> None:
    done = run_example("native_core.py")
    lines = done.stdout.splitlines()
    assert lines[0] == "json_length: 169 == 169"
    assert lines[1] == "message tokens: 18"
    assert lines[3] == "redacted: {'env': 'KEY=[REDACTED] done'}"
    assert lines[4] == "entries: ['e1']"
    assert lines[5] == "line 2: missing field 'label'"
    assert lines[6].endswith("(torn last line: no trailing newline)")
    assert lines[7].endswith("at $.messages[0].content[0].arguments.when")
