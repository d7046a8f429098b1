"""Several ``prism --session`` processes on one session never fork it.

Each run claims its session's lease (a flock on a per-session lock file next
to the session file) before it loads, so a concurrent process either runs on
top of the finished ones or fails at once with a clear busy error
(issue 11 item 5, issue 15 "Session leases"). Real processes, real files.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from conftest import SAFETY_TIMEOUT, prism_executable

BUSY = b"prism: error: session 'shared' is busy: a run in another process or store holds it\n"


def start(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(prism_executable()), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def session_chain(prism_home: Path, session_id: str) -> list[dict[str, Any]]:
    """The session's entries, asserting they form one chain: one root, and
    every entry's parent is the entry before it."""
    path = prism_home / "sessions.jsonl"
    entries = [json.loads(line) for line in path.read_bytes().splitlines()]
    mine = [e for e in entries if e["sessionId"] == session_id]
    assert [e["parentId"] for e in mine] == [None] + [e["id"] for e in mine[:-1]], mine
    return mine


def texts(entries: list[dict[str, Any]]) -> list[str]:
    return [e["message"]["content"][0]["text"] for e in entries]


def test_four_concurrent_processes_never_fork_the_session(
    cli_env: dict[str, str], prism_home: Path, prism_run: Any
) -> None:
    # A small per-event delay so the runs overlap; the assertions hold for
    # every interleaving (all four serialized, or some refused as busy).
    procs = [
        start(cli_env, "--session", "shared", "--mock-delay-ms", "20", "-p", f"question {n}")
        for n in range(4)
    ]
    outcomes = [proc.communicate(timeout=SAFETY_TIMEOUT) for proc in procs]
    codes = [proc.returncode for proc in procs]
    ran = [n for n, code in enumerate(codes) if code == 0]
    assert ran, (codes, outcomes)
    for n, ((stdout, stderr), code) in enumerate(zip(outcomes, codes, strict=True)):
        if code != 0:
            assert (code, stdout, stderr) == (1, b"", BUSY), n
    chain = session_chain(prism_home, "shared")
    # Each run that went through appended its question and the reply, in
    # turn order: turn k saw the k-1 exchanges before it.
    questions = [t for t in texts(chain) if t.startswith("question")]
    assert sorted(questions) == sorted(f"question {n}" for n in ran)
    replies = [t for t in texts(chain) if t.startswith("Mock reply")]
    assert replies == [f"Mock reply to: {q} (turn {k})" for k, q in enumerate(questions, 1)]
    # And the next call sees every exchange: nothing was dropped.
    after = prism_run("--session", "shared", "-p", "after")
    assert after.returncode == 0, after.stderr
    assert after.stdout == f"Mock reply to: after (turn {len(ran) + 1})".encode()
    session_chain(prism_home, "shared")


def test_two_processes_racing_for_one_session_exactly_one_runs(
    cli_env: dict[str, str], prism_home: Path, prism_run: Any
) -> None:
    # The holder streams json events slowly; its first event (run_started)
    # is printed only once it holds the lease.
    holder = start(
        cli_env, "--session", "shared", "--mode", "json", "--mock-delay-ms", "600000", "-p", "slow"
    )
    try:
        assert holder.stdout is not None
        first = json.loads(holder.stdout.readline())
        assert first["event"]["type"] == "run_started"
        racer = prism_run("--session", "shared", "-p", "racer")
        assert (racer.returncode, racer.stdout, racer.stderr) == (1, b"", BUSY)
        # Another session in the same file is not held.
        other = prism_run("--session", "other", "-p", "hello")
        assert other.returncode == 0, other.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=SAFETY_TIMEOUT)
    # The kernel released the dead holder's lock: the session runs again,
    # on top of what the killed run had stored (its question), as one chain.
    again = prism_run("--session", "shared", "-p", "again")
    assert again.returncode == 0, again.stderr
    assert texts(session_chain(prism_home, "shared")) == [
        "slow",
        "again",
        "Mock reply to: again (turn 2)",
    ]
