"""The runtime examples run as documented (each in a fresh interpreter)."""

from __future__ import annotations

from example_runner import run_example


def example_lines(name: str) -> list[str]:
    return run_example(name).stdout.splitlines()


def test_demo_runs_a_tool_round_then_answers() -> None:
    lines = example_lines("demo.py")
    events = [line.split()[1] for line in lines if line.startswith("event:")]
    assert events == [
        "run_started",
        "message_started",
        "message_delta",
        "message_finished",
        "tool_call",
        "tool_result",
        "message_started",
        "message_delta",
        "message_delta",
        "message_finished",
        "run_finished",
    ]
    assert "answer: It is sunny in Lisbon, 21 °C." in lines
    stored = [line.split()[2:] for line in lines if line.startswith("  entry_")]
    assert [row[-2:] for row in stored] == [
        ["user", "text"],
        ["assistant", "thinking,tool_call"],
        ["tool", "tool_result"],
        ["assistant", "text"],
    ]
    assert "session file: 4 lines" in lines
    assert "reopened from file: ['user', 'assistant', 'tool', 'assistant']" in lines


def test_runtime_session_walkthrough() -> None:
    lines = example_lines("runtime_session.py")
    assert lines == [
        "stream: run_started",
        "stream: message_started",
        "stream: message_delta",
        "stream: message_finished",
        "stream: run_finished",
        "run 2 roles: ['user', 'assistant', 'tool', 'user', 'assistant', 'user', 'assistant']",
        "run 2 answer: Summary: anyio is a compatibility layer.",
        "run 3: Agent run aborted (aborted)",
        "run 4 model: large",
        "state: {'sessionId': 'walkthrough', 'isRunning': False, 'entryCount': 13, 'messageCount': 12}",
    ]


def test_branching_walkthrough() -> None:
    lines = example_lines("branching.py")
    assert lines == [
        "main: ['plan A', 're: plan A', 'details of A', 're: details of A']",
        "main now: ['plan A', 're: plan A', 'plan B instead', 're: plan B instead']",
        "leaves: 2 entries: 6",
        "other branch: ['plan A', 're: plan A', 'details of A', 're: details of A']",
        "labels: ['first plan']",
        "fork: ['plan A', 're: plan A']",
        "clone: ['plan A', 're: plan A', 'plan B instead', 're: plan B instead']",
        "sessions: ['main', 'fork', 'clone']",
        "after compaction: ['re: plan B instead'] summaries: 1",
    ]


def test_runtime_streaming_walkthrough() -> None:
    lines = example_lines("runtime_streaming.py")
    assert lines == [
        "compaction trigger: {'type': 'input_ratio', 'ratio': 0.9}",
        "run_sync: echo: hello",
        "delta: echo: ",
        "delta: streamed",
        "result: echo: streamed",
        "running after break: False",
        "next run: echo: again",
        "must_exist: unknown_name",
        "reopened messages: 7",
    ]


def test_runtime_host_seams_walkthrough() -> None:
    assert example_lines("runtime_host_seams.py") == [
        "turn 1: local answer",
        "first message sent: House rules.",
        "turn 2: remote answer",
        "model now: big {'contextWindow': 128000}",
        "auto_compact: compaction",
        "again: None",
    ]
