"""The attention examples run as docs/attention.md shows."""

from __future__ import annotations

import re

from example_runner import run_example


def test_attention_demo_runs() -> None:
    done = run_example("attention_demo.py")
    out = done.stdout
    assert "attention_compiled:" in out
    assert re.search(
        r"Tool result read_file \[call_1\]: omitted \d+ bytes \(sha256 [0-9a-f]{32}\)", out
    )
    assert "session store: 5 full tool results kept" in out


def test_attention_persist_demo_runs() -> None:
    done = run_example("attention_persist_demo.py")
    assert "session file: 1 frontier checkpoint(s)" in done.stdout
    assert "after the restart: first request has 3 stubbed results" in done.stdout
    assert "cached prefix kept across the restart: True" in done.stdout


def test_attention_policy_demo_runs() -> None:
    done = run_example("attention_policy_demo.py")
    out = done.stdout
    lines = {line.split()[0]: line for line in out.splitlines() if "cache busts" in line}
    busts = {name: int(line.rsplit(" ", 1)[1]) for name, line in lines.items()}
    assert busts["default"] == 1 and busts["reference"] > busts["default"]
    assert "summarizer called 6 times for 6 tool calls" in out


def test_calibration_session_example_resumes_calibrated() -> None:
    out = run_example("calibration_session.py").stdout.splitlines()
    assert out[0] == "first process, first estimate off by -50%"
    off = int(out[1].rsplit(" ", 1)[1].rstrip("%"))
    assert out[1].startswith("after the restart, first estimate off by") and abs(off) <= 5
    assert out[2].startswith("mock/demo: prose ratio 2.0")
