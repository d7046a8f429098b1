"""``prism sessions [--unfinished] [--resume-all]`` on the CLI's session file:
real processes, a real JSONL file with runs killed mid-way."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from conftest import run_prism
from prism.stores import create_jsonl_session_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "durable"))
from test_resume_all import crash, damage_started_calls, make_agent


def test_sessions_lists_unfinished_runs_and_resumes_them_all(
    cli_env: dict[str, str], prism_home: Path
) -> None:
    prism_home.mkdir(parents=True)
    path = prism_home / "sessions.jsonl"

    async def crashed_runs() -> None:
        await crash(path, "a", "first job", after=1)
        await crash(path, "bad", "refund it", after=3)
        store = create_jsonl_session_store(path)
        await make_agent(store).create_session("b").run("second job")  # finished

    anyio.run(crashed_runs)
    damage_started_calls(path, "bad")

    listed = run_prism(cli_env, "sessions")
    assert listed.returncode == 0 and listed.stdout.split() == [b"a", b"bad", b"b"]
    unfinished = run_prism(cli_env, "sessions", "--unfinished")
    assert unfinished.stdout.split() == [b"a", b"bad"], unfinished.stderr

    resumed = run_prism(cli_env, "sessions", "--resume-all")
    assert resumed.returncode == 1, resumed.stderr
    lines = resumed.stdout.decode().splitlines()
    assert lines[0] == "resumed a"
    assert lines[1].startswith("failed bad: cannot resume session 'bad'")

    left = run_prism(cli_env, "sessions", "--unfinished", "--json")
    assert json.loads(left.stdout) == {"sessions": ["bad"]}


def test_sessions_flags_are_checked(cli_env: dict[str, str]) -> None:
    done = run_prism(cli_env, "sessions", "--model", "x")
    assert done.returncode == 2 and b"need --resume-all" in done.stderr
    empty = run_prism(cli_env, "sessions", "--unfinished")
    assert empty.returncode == 0 and empty.stdout == b""
