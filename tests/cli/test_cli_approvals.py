"""A durable run that pauses for approval, through the real ``prism``
executable (issue 26): asked on a real pseudo-terminal, answered by
``--approve-all``/``--deny-all``, reported plainly when nobody can answer,
and answered over RPC (``approvals``, ``approve``, ``deny``) with every bad
decision refused. The host's agent is the approval scenario of
tests/approvals on a real SQLite store; its tools count their executions in
a side file, across processes."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import SAFETY_TIMEOUT, RpcClient, prism_executable

APPROVALS_TESTS = Path(__file__).resolve().parent.parent / "approvals"
HOST_APP = """
import os
import sys
from pathlib import Path

sys.path.insert(0, os.environ["APPROVAL_TESTS"])
from approval_scenario import make_agent

from prism.stores.sqlite import SqliteSessionStore


def build():
    store = SqliteSessionStore(os.environ["APPROVAL_DB"])
    return make_agent(store, Path(os.environ["APPROVAL_COUNTS"]))
"""
AGENT = ("--agent", "refundapp:build")


@pytest.fixture
def app(tmp_path: Path, cli_env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "refundapp.py").write_text(HOST_APP)
    env = dict(cli_env)
    env["APPROVAL_TESTS"] = str(APPROVALS_TESTS)
    env["APPROVAL_DB"] = str(tmp_path / "host.sqlite")
    env["APPROVAL_COUNTS"] = str(tmp_path / "counts")
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env.get("PYTHONPATH", "")])
    return folder, env


def prism(app: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    folder, env = app
    return subprocess.run(
        [str(prism_executable()), *args],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


def executions(app: tuple[Path, dict[str, str]], tool: str) -> int:
    counts = Path(app[1]["APPROVAL_COUNTS"])
    if not counts.exists():
        return 0
    return sum(1 for line in counts.read_text().splitlines() if line.startswith(tool + " "))


def test_a_paused_run_without_a_terminal_says_so_and_continues_later(
    app: tuple[Path, dict[str, str]],
) -> None:
    paused = prism(app, *AGENT, "--session", "t1", "-p", "refund A-17")
    assert paused.returncode == 3, paused.stderr
    assert paused.stdout == "refunding"
    assert "is paused, waiting for approval of 1 tool call" in paused.stderr
    assert "stdin is not a terminal" in paused.stderr
    assert "prism --agent refundapp:build --session t1 --resume --approve-all" in paused.stderr
    assert 'refund {"order":"A-17","cents":1250}' in paused.stderr
    assert (executions(app, "refund"), executions(app, "lookup")) == (0, 1)

    # Another process answers it; the approved refund runs exactly once.
    done = prism(app, *AGENT, "--session", "t1", "--resume", "--approve-all")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith('refund outcome: {"error": false')
    assert executions(app, "refund") == 1
    again = prism(app, *AGENT, "--session", "t1", "--resume", "--approve-all")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert executions(app, "refund") == 1


def test_json_mode_ends_with_the_waiting_line_and_deny_all_answers(
    app: tuple[Path, dict[str, str]],
) -> None:
    paused = prism(app, *AGENT, "--session", "t2", "--mode", "json", "-p", "refund")
    assert paused.returncode == 3, paused.stderr
    lines = [json.loads(line) for line in paused.stdout.splitlines()]
    requested = [x["event"] for x in lines[:-1] if x["event"]["type"] == "approval_requested"]
    waiting = lines[-1]
    assert waiting["type"] == "approval_waiting"
    assert waiting["sessionId"] == "t2" and waiting["runId"] == requested[0]["runId"]
    assert [a["id"] for a in waiting["pendingApprovals"]] == [requested[0]["approval"]["id"]]
    assert "waiting for approval" in waiting["message"]
    assert waiting["continue"]["deny"] == [
        "prism", *AGENT, "--session", "t2", "--resume", "--mode", "json", "--deny-all",
    ]  # fmt: skip

    denied = prism(app, *waiting["continue"]["deny"][1:])
    assert (denied.returncode, denied.stderr) == (0, "")
    events = [json.loads(line)["event"] for line in denied.stdout.splitlines()]
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert [(e["decision"], e["reason"]) for e in decided] == [("deny", "denied by --deny-all")]
    assert events[-1]["type"] == "run_finished"
    assert executions(app, "refund") == 0


def test_the_approval_flags_are_checked(app: tuple[Path, dict[str, str]]) -> None:
    both = prism(app, *AGENT, "--approve-all", "--deny-all", "-p", "x")
    assert both.returncode == 2 and "exclude each other" in both.stderr
    rpc = prism(app, "--mode", "rpc", "--approve-all")
    assert rpc.returncode == 2 and "rpc client sends approve/deny" in rpc.stderr


class Terminal:
    """``prism`` with stdin, stdout and stderr on a real pseudo-terminal."""

    def __init__(self, app: tuple[Path, dict[str, str]], *args: str) -> None:
        folder, env = app
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [str(prism_executable()), *args],
            cwd=folder,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.seen:
            ready, _, _ = select.select([self.master], [], [], SAFETY_TIMEOUT)
            assert ready, f"no {marker!r} from prism; so far: {self.seen!r}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every slave end closed, prism exited
                chunk = b""
            if not chunk:
                raise AssertionError(f"prism ended before {marker!r}: {self.seen!r}")
            self.seen += chunk
        return self.seen

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def finish(self) -> tuple[int, bytes]:
        while True:
            ready, _, _ = select.select([self.master], [], [], SAFETY_TIMEOUT)
            assert ready, self.seen
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.seen += chunk
        os.close(self.master)
        return self.proc.wait(timeout=SAFETY_TIMEOUT), self.seen


def test_on_a_terminal_each_approval_is_asked(app: tuple[Path, dict[str, str]]) -> None:
    terminal = Terminal(app, *AGENT, "--session", "t3", "-p", "refund A-17")
    try:
        terminal.read_until(b"approve? [y/N] ")
        assert b'approval needed (1 of 1): refund {"order":"A-17","cents":1250}' in terminal.seen
        assert b"why: tool 'refund' needs approval" in terminal.seen
        assert executions(app, "refund") == 0
        terminal.type(b"perhaps\n")
        terminal.read_until(b"please answer y or n")
        terminal.type(b"y\n")
        code, seen = terminal.finish()
    finally:
        if terminal.proc.poll() is None:
            terminal.proc.kill()
            terminal.proc.wait(timeout=SAFETY_TIMEOUT)
    assert code == 0, seen
    assert b'refund outcome: {"error": false' in seen
    assert executions(app, "refund") == 1


def request_ok(client: RpcClient, request: dict[str, Any]) -> dict[str, Any]:
    response = client.request(request)
    assert response["ok"] is True, response
    result: dict[str, Any] = response["result"]
    return result


def refused(client: RpcClient, request: dict[str, Any]) -> dict[str, Any]:
    response = client.request(request)
    assert response["ok"] is False, response
    error: dict[str, Any] = response["error"]
    return error


def test_rpc_lists_approves_and_denies_and_refuses_bad_decisions(
    app: tuple[Path, dict[str, str]],
) -> None:
    client = RpcClient(app[1], *AGENT, "--session", "r1")
    try:
        client.send({"id": "p1", "command": "prompt", "params": {"input": "refund"}})
        events, response = client.until_response("p1")
        assert response["ok"] is True, response
        first = response["result"]
        assert (first["paused"], first["waitingFor"]) == (True, "approval")
        (approval,) = first["pendingApprovals"]
        assert approval["tool"] == "refund"
        assert "approval_requested" in [e["event"]["type"] for e in events]
        listed = request_ok(client, {"id": "l1", "command": "approvals"})
        assert listed == {"sessionId": "r1", "waiting": True, "pendingApprovals": [approval]}

        # Another session's pending approval is not this session's to decide.
        request_ok(client, {"id": "s2", "command": "switchSession", "params": {"sessionId": "r2"}})
        other = request_ok(client, {"id": "p2", "command": "prompt", "params": {"input": "x"}})
        foreign = other["pendingApprovals"][0]["id"]
        request_ok(client, {"id": "s1", "command": "switchSession", "params": {"sessionId": "r1"}})
        for bad, needle in [
            ({"approvalId": foreign}, "another session's"),
            ({"approvalId": "approval_nope"}, "not an approval of this session"),
        ]:
            error = refused(client, {"id": "b", "command": "approve", "params": bad})
            assert error["code"] == "invalid_approval_decision" and needle in error["message"]
        for command, params, needle in [
            ("approve", {}, "needs params.approvalId"),
            ("deny", {"approvalId": approval["id"], "arguments": {}}, "does not take"),
            ("approve", {"approvalId": approval["id"], "reason": 5}, "reason must be a string"),
            ("approve", {"approvalId": approval["id"], "arguments": []}, "must be an object"),
        ]:
            error = refused(client, {"id": "c", "command": command, "params": params})
            assert error["code"] == "invalid_params" and needle in error["message"], error
        assert executions(app, "refund") == 0

        approve = {"id": "a1", "command": "approve", "params": {"approvalId": approval["id"]}}
        client.send(approve)
        events, response = client.until_response("a1")
        assert response["ok"] is True, response
        assert "paused" not in response["result"]
        assert response["result"]["text"].startswith('refund outcome: {"error": false')
        decided = [e["event"] for e in events if e["event"]["type"] == "approval_decided"]
        assert [(e["approvalId"], e["decision"]) for e in decided] == [(approval["id"], "approve")]
        assert all(e["id"] == "a1" for e in events)
        assert executions(app, "refund") == 1

        twice = refused(client, {**approve, "id": "a2"})
        assert "was already decided" in twice["message"]
        assert request_ok(client, {"id": "l2", "command": "approvals"})["waiting"] is False

        request_ok(client, {"id": "s3", "command": "switchSession", "params": {"sessionId": "r2"}})
        deny = {"approvalId": foreign, "reason": "over the limit"}
        client.send({"id": "d1", "command": "deny", "params": deny})
        _, response = client.until_response("d1")
        assert response["ok"] is True, response
        assert "was not approved: over the limit" in response["result"]["text"]
        assert executions(app, "refund") == 1
        code, rest, stderr = client.close()
        assert (code, rest, stderr) == (0, [], b"")
    finally:
        client.kill()
