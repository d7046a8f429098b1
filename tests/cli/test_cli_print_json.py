"""print and json modes of the installed ``prism`` script, and --session
persistence across separate processes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ENVELOPE_KEYS = {"type", "sessionId", "runId", "event"}


def json_lines(stdout: bytes) -> list[dict[str, Any]]:
    assert stdout.endswith(b"\n")
    return [json.loads(line) for line in stdout.split(b"\n")[:-1]]


def test_print_mode_writes_only_the_assistant_text(prism_run: Any, prism_home: Path) -> None:
    result = prism_run("-p", "Hello world")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"Mock reply to: Hello world (turn 1)"
    assert result.stderr == b""
    assert not prism_home.exists()  # no --session: nothing persisted


def test_print_mode_keeps_unicode_and_newlines_of_the_prompt(prism_run: Any) -> None:
    prompt = "naïve\nline two \u2028 ✓"
    result = prism_run("--provider", "mock", "--model", "demo", "-p", prompt)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == f"Mock reply to: {prompt} (turn 1)"


def test_print_mode_failure_is_one_stderr_line_and_exit_1(prism_run: Any) -> None:
    result = prism_run("-p", "mock:error")
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr == b"prism: error: Mock provider error (requested by the prompt)\n"


def test_json_mode_writes_one_envelope_per_line(prism_run: Any) -> None:
    result = prism_run("--mode", "json", "-p", "Hi there")
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    run_ids = set()
    for envelope in lines:
        assert set(envelope) == ENVELOPE_KEYS
        assert envelope["type"] == "event"
        assert envelope["sessionId"] == envelope["event"]["sessionId"]
        assert envelope["runId"] == envelope["event"]["runId"]
        run_ids.add(envelope["runId"])
    assert len(run_ids) == 1
    types = [e["event"]["type"] for e in lines]
    assert types[0] == "run_started"
    assert types[-1] == "run_finished"
    assert types[1] == "message_started"
    assert "message_finished" in types
    deltas = [e["event"]["delta"]["text"] for e in lines if e["event"]["type"] == "message_delta"]
    assert len(deltas) > 1  # streamed, not one blob
    assert "".join(deltas) == "Mock reply to: Hi there (turn 1)"


def test_json_mode_failed_run_exits_non_zero(prism_run: Any) -> None:
    result = prism_run("--mode", "json", "-p", "mock:error")
    assert result.returncode == 1
    lines = json_lines(result.stdout)
    assert lines[-1]["event"]["type"] == "error"
    assert lines[-1]["event"]["error"]["code"] == "mock_error"
    assert result.stderr.count(b"\n") == 1


def test_session_continues_across_two_processes(prism_run: Any, prism_home: Path) -> None:
    first = prism_run("--session", "chat-1", "-p", "first question")
    assert first.returncode == 0, first.stderr
    assert first.stdout == b"Mock reply to: first question (turn 1)"
    second = prism_run("--session", "chat-1", "-p", "second question")
    assert second.returncode == 0, second.stderr
    # turn 2: the second request carried the first exchange
    assert second.stdout == b"Mock reply to: second question (turn 2)"
    other = prism_run("--session", "chat-2", "-p", "unrelated")
    assert other.stdout == b"Mock reply to: unrelated (turn 1)"

    path = prism_home / "sessions.jsonl"
    entries = [json.loads(line) for line in path.read_bytes().splitlines()]
    chat = [e for e in entries if e["sessionId"] == "chat-1"]
    texts = [e["message"]["content"][0]["text"] for e in chat]
    assert texts == [
        "first question",
        "Mock reply to: first question (turn 1)",
        "second question",
        "Mock reply to: second question (turn 2)",
    ]
    # one chain: each entry's parent is the previous one
    assert [e["parentId"] for e in chat] == [None] + [e["id"] for e in chat[:-1]]


def test_session_file_location_follows_xdg_data_home(
    prism_run: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    del cli_env["PRISM_HOME"]
    cli_env["XDG_DATA_HOME"] = str(tmp_path / "data")
    result = prism_run("--session", "s", "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "prism" / "sessions.jsonl").is_file()


def test_unwritable_session_location_fails_cleanly(
    prism_run: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    cli_env["PRISM_HOME"] = str(blocker)
    result = prism_run("--session", "s", "-p", "hi")
    assert result.returncode == 1
    assert result.stdout == b""
    err = result.stderr.decode()
    assert err.startswith("prism: error: ") and err.count("\n") == 1
    assert blocker.read_bytes() == b""


@pytest.mark.parametrize("mode", ["print", "json"])
def test_system_context_and_recorded_flags_are_accepted(prism_run: Any, mode: str) -> None:
    result = prism_run(
        "--mode",
        mode,
        "-p",
        "hi",
        "--system",
        "Be brief.",
        "--context",
        "The user likes tea.",
        "--compact",
        "50",
        "--max-tool-rounds",
        "2",
        "--resource",
        "file:///nowhere/never-read.txt",
        "--extension",
        "not_an_importable_module",
        "--tool",
        "shell",
    )
    # recorded only: the resource is not fetched, the extension not imported
    assert result.returncode == 0, result.stderr
    assert b"Mock reply to: hi (turn 1)" in result.stdout or mode == "json"


def test_compact_flag_auto_compacts_a_persisted_session(prism_run: Any, prism_home: Path) -> None:
    for n in range(3):
        result = prism_run("--session", "long", "--compact", "2", "-p", f"message {n}")
        assert result.returncode == 0, result.stderr
    entries = [
        json.loads(line) for line in (prism_home / "sessions.jsonl").read_bytes().splitlines()
    ]
    assert any(e["kind"] == "compaction" for e in entries)


def test_otel_writes_spans_to_stderr_and_keeps_stdout_clean(prism_run: Any) -> None:
    done = prism_run("--otel", "--mode", "json", "-p", "hi")
    assert done.returncode == 0, done.stderr
    for line in done.stdout.decode().splitlines():
        assert json.loads(line)["type"] == "event"
    err = done.stderr.decode()
    assert '"name": "invoke_agent prism"' in err and '"name": "chat demo"' in err


def test_otel_without_the_extra_names_it(
    prism_run: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow" / "opentelemetry"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n")
    cli_env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path / "shadow"), *filter(None, [cli_env.get("PYTHONPATH")])]
    )
    done = prism_run("--otel", "-p", "hi")
    assert done.returncode == 2
    assert b"prism-harness[otel]" in done.stderr
