from __future__ import annotations

from example_runner import run_example


def test_extension_demo_runs_and_keeps_the_secret_out() -> None:
    completed = run_example("extension_demo.py")
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
