"""``prism --session NAME --durable`` checkpoints a run; a process killed
mid-run is continued by ``prism --session NAME --resume`` (real processes,
a real session file). Issue 16."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from conftest import SAFETY_TIMEOUT, prism_executable, run_prism


def checkpoints(prism_home: Path) -> list[dict[str, object]]:
    lines = (prism_home / "sessions.jsonl").read_bytes().splitlines()
    return [
        entry["data"]
        for entry in map(json.loads, lines)
        if entry.get("customType") == "prism.checkpoint"
    ]


def test_a_killed_durable_run_is_resumed(cli_env: dict[str, str], prism_home: Path) -> None:
    # Slow mock deltas: the process is killed while the answer streams, after
    # the input and its checkpoint were stored.
    child = subprocess.Popen(
        [
            str(prism_executable()),
            "--session",
            "job",
            "--durable",
            "--mode",
            "json",
            "--mock-delay-ms",
            "1000",
            "-p",
            "count the parcels",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if json.loads(line).get("event", {}).get("type") == "message_delta":
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=SAFETY_TIMEOUT)
    child.stdout.close()
    assert child.stderr is not None
    child.stderr.close()
    assert [c["phase"] for c in checkpoints(prism_home)] == ["input"]

    resumed = run_prism(cli_env, "--session", "job", "--resume", "--mode", "json")
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line)["event"] for line in resumed.stdout.splitlines()]
    types = [event["type"] for event in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    run_id = checkpoints(prism_home)[0]["runId"]
    assert {event.get("runId") for event in events} == {run_id}  # the same run goes on
    assert [c["phase"] for c in checkpoints(prism_home)] == ["input", "end"]

    again = run_prism(cli_env, "--session", "job", "--resume")
    assert again.returncode == 0 and again.stdout == b"" and again.stderr == b""


def test_resume_flags_are_checked(cli_env: dict[str, str]) -> None:
    cases = [
        (("--resume",), b"--resume needs --session NAME"),
        (("--resume", "--session", "s", "-p", "hi"), b"-p/--prompt is not used with --resume"),
        (("--resume", "--session", "s", "--mode", "rpc"), b"--resume applies to print and json"),
        (("--durable", "-p", "hi"), b"--durable needs --session NAME"),
    ]
    for args, message in cases:
        done = run_prism(cli_env, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def test_a_run_dbos_owns_is_not_resumed_here(cli_env: dict[str, str], prism_home: Path) -> None:
    stamp = "2026-11-30T00:00:00.000Z"
    entries = [
        {
            "id": "entry_a",
            "sessionId": "job",
            "parentId": None,
            "kind": "message",
            "createdAt": stamp,
            "message": {"role": "user", "content": [{"type": "text", "text": "count"}]},
        },
        {
            "id": "entry_b",
            "sessionId": "job",
            "parentId": "entry_a",
            "kind": "custom",
            "customType": "prism.checkpoint",
            "createdAt": stamp,
            "data": {"version": 1, "runId": "run-7", "step": 1, "phase": "input", "engine": "dbos"},
        },
    ]
    path = prism_home / "sessions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    before = path.read_bytes()
    done = run_prism(cli_env, "--session", "job", "--resume")
    assert done.returncode == 1, done.stderr
    assert b"belongs to 'dbos'" in done.stderr
    assert path.read_bytes() == before
