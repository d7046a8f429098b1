"""shell on real subprocesses: argv vs strings under the policy, the env
allow-list, timeouts and floods that kill the whole process group, stdin
closed, and abort."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from coding_helpers import Call, error_of, make_call

from prism.coding import CodingLimits, create_coding_tools
from prism.security import NOOP_REDACTOR, allow_command, create_execution_policy

pytestmark = pytest.mark.anyio


def alive(pids: list[int]) -> list[int]:
    living = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # a zombie waiting for its reaper is dead for our purposes
        with open(f"/proc/{pid}/stat") as handle:
            if handle.read().split()[2] != "Z":
                living.append(pid)
    return living


async def test_argv_and_string_commands(workspace: Path, call: Call, events: list[Any]) -> None:
    result = await call("shell", argv=["ls", "src"])
    assert result["value"] == {"exit_code": 0, "output": "app.py\n"}
    piped = await call("shell", command="echo one two | wc -w")
    assert piped["value"]["output"].strip() == "2"
    failing = await call("shell", command="exit 3")
    assert failing["value"]["exit_code"] == 3
    started = [e for e in events if e["type"] == "command_started"]
    finished = [e for e in events if e["type"] == "command_finished"]
    assert started[0]["argv"] == ["ls", "src"] and started[1]["argv"][:2] == ["bash", "-c"]
    assert finished[0]["exitCode"] == 0 and finished[0]["durationMs"] >= 0


async def test_policy_sees_argv_not_a_string(workspace: Path) -> None:
    policy = create_execution_policy(
        [workspace], [allow_command("ls", "...")], redactor=NOOP_REDACTOR
    )
    call = make_call(
        create_coding_tools(workspace, execution_policy=policy, redactor=NOOP_REDACTOR)
    )
    assert (await call("shell", command="ls src"))["value"]["exit_code"] == 0
    sneaky = await call("shell", command="ls src; touch pwned")
    assert sneaky["value"]["code"] == "policy_denied"
    assert not (workspace / "pwned").exists()


async def test_env_is_an_allow_list(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRISM_TEST_SECRET", "hunter2-secret-value")
    monkeypatch.setenv("PRISM_TEST_SHARED", "shared")
    policy = create_execution_policy([workspace], [allow_command("env")], redactor=NOOP_REDACTOR)
    call = make_call(
        create_coding_tools(
            workspace,
            execution_policy=policy,
            inherit_env=["PRISM_TEST_SHARED"],
            redactor=NOOP_REDACTOR,
        )
    )
    output = (await call("shell", argv=["env"]))["value"]["output"]
    assert "PRISM_TEST_SHARED=shared" in output
    assert "hunter2" not in output
    assert sorted(line.split("=")[0] for line in output.splitlines()) == [
        "PATH",
        "PRISM_TEST_SHARED",
    ]


async def test_cwd_must_be_inside_roots(workspace: Path, call: Call, tmp_path: Path) -> None:
    assert (
        (await call("shell", argv=["pwd"], cwd="src"))["value"]["output"]
        .strip()
        .endswith("/ws/src")
    )
    refused = await call("shell", argv=["pwd"], cwd=str(tmp_path))
    assert refused["value"]["code"] == "policy_denied"
    assert "not a directory" in error_of(await call("shell", argv=["pwd"], cwd="src/app.py"))
    assert "not found" in error_of(await call("shell", argv=["no-such-program-xyz"]))
    assert "exactly one of command or argv" in error_of(await call("shell"))


async def test_stdin_is_closed(call: Call) -> None:
    result = await call("shell", command="read line; echo status=$?", timeout_ms=30_000)
    assert result["value"]["output"].strip() == "status=1"
    assert (await call("shell", argv=["cat"], timeout_ms=30_000))["value"] == {
        "exit_code": 0,
        "output": "",
    }


async def test_timeout_kills_the_whole_group(workspace: Path, call: Call) -> None:
    # a small fork storm: children and grandchildren that never exit
    script = "echo $$; for i in $(seq 20); do (sleep 1000 & sleep 1000) & done; sleep 1000"
    result = await call("shell", command=script, timeout_ms=3000)
    value = result["value"]
    assert value["exit_code"] is None and "timed out" in value["note"]
    leader = int(value["output"].split()[0])
    members = [int(p) for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == leader]
    assert alive(members) == []


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


async def test_background_child_does_not_outlive_the_call(call: Call) -> None:
    result = await call("shell", command="sleep 1000 & echo $!", timeout_ms=60_000)
    child = int(result["value"]["output"].strip())
    assert result["value"]["exit_code"] == 0
    assert alive([child]) == []


async def test_output_flood_is_capped_and_killed(workspace: Path) -> None:
    policy = create_execution_policy([workspace], [allow_command("yes")], redactor=NOOP_REDACTOR)
    limits = CodingLimits(shell_output_cap=1000, shell_kill_after_bytes=5_000_000)
    call = make_call(
        create_coding_tools(
            workspace, execution_policy=policy, limits=limits, redactor=NOOP_REDACTOR
        )
    )
    value = (await call("shell", argv=["yes"], timeout_ms=600_000))["value"]
    assert "printed over 5000000 bytes" in value["note"]
    assert value["omitted_bytes"] > 5_000_000 - 1000
    assert len(value["output"]) < 1200 and "bytes of output omitted" in value["output"]


async def test_head_and_tail_are_kept(workspace: Path) -> None:
    policy = create_execution_policy([workspace], [allow_command("seq")], redactor=NOOP_REDACTOR)
    limits = CodingLimits(shell_output_cap=200)
    call = make_call(
        create_coding_tools(
            workspace, execution_policy=policy, limits=limits, redactor=NOOP_REDACTOR
        )
    )
    value = (await call("shell", argv=["seq", "100000"]))["value"]
    assert value["output"].startswith("1\n2\n3\n") and value["output"].endswith("99999\n100000\n")


async def test_abort_kills_the_group(workspace: Path, call: Call) -> None:
    fifo = workspace / "pid.fifo"
    os.mkfifo(fifo)
    command = f"sleep 1000 & echo $! > {fifo}; wait"
    child: list[int] = []

    def read_pid() -> None:
        with open(fifo) as handle:  # blocks until the command has written it
            child.append(int(handle.read()))

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: call("shell", command=command, timeout_ms=600_000))
            await anyio.to_thread.run_sync(read_pid)
            scope.cancel()
    assert child and alive(child) == []
