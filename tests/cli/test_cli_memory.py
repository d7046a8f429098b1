"""`prism --memory observational` and contributed commands through a real
`prism --mode rpc` process: om:status, om:view, the recall tool, the
post-run gate, and commands from a host and from an extension."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import SAFETY_TIMEOUT, RpcClient

GOLDEN = Path(__file__).parents[1] / "memory" / "golden" / "om_branch.jsonl"
HOST_SCRIPT = Path(__file__).parent / "cli_host_script.py"


def seed_session(prism_home: Path, session_id: str = "trip") -> list[dict[str, Any]]:
    """The golden memory branch, stored as the CLI's session file."""
    entries = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    for entry in entries:
        entry["sessionId"] = session_id
    prism_home.mkdir(parents=True, exist_ok=True)
    (prism_home / "sessions.jsonl").write_text(
        "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
    )
    return entries


def command(
    client: RpcClient, request_id: str, name: str, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if args:
        params["args"] = args
    return client.request({"id": request_id, "command": "command", "params": params})


def prompt(
    client: RpcClient, request_id: str, text: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    client.send({"id": request_id, "command": "prompt", "params": {"input": text}})
    return client.until_response(request_id)


def test_status_view_and_recall_over_rpc(rpc: Any, prism_home: Path) -> None:
    seed_session(prism_home)
    client = rpc("--session", "trip", "--memory", "observational")
    status = command(client, "s1", "om:status")
    assert status["ok"], status
    result = status["result"]
    assert result["sessionId"] == "trip"
    assert result["observations"] == {"recorded": 4, "dropped": 1, "active": 3, "visible": 3}
    assert result["reflections"] == {"recorded": 1, "visible": 1}
    assert result["coverage"]["observedUpToId"] == "e07"
    assert result["runtime"] == {"inFlight": False, "lastError": None, "lastRun": None}

    visible = command(client, "v1", "om:view")["result"]
    assert visible["mode"] == "visible"
    assert "- [0000000000b1] A May trip to Lisbon" in visible["text"]
    full = command(client, "v2", "om:view", {"mode": "full"})["result"]
    assert [o["id"] for o in full["observations"]] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    usage = command(client, "v3", "om:view", {"mode": "everything"})
    assert usage["result"] == {"text": "Usage: /om:view [full]", "usage": True}

    events, response = prompt(client, "p1", 'mock:tool recall {"id": "0000000000b1"}')
    assert response["ok"], response
    (result_event,) = [m["event"] for m in events if m["event"]["type"] == "tool_result"]
    details = result_event["result"]["value"]["details"]
    assert details["kind"] == "reflection" and details["found"] is True
    assert [o["id"] for o in details["supportingObservations"]] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    assert [e["id"] for e in details["sourceEntries"]] == ["e01", "e03", "e05", "e06"]

    events, _ = prompt(client, "p2", 'mock:tool recall {"id": "NOT-AN-ID"}')
    (refused,) = [m["event"] for m in events if m["event"]["type"] == "tool_result"]
    assert refused["result"]["isError"] is True
    assert "12 lowercase hex" in json.dumps(refused["result"]["value"])

    code, _, stderr = client.close()
    assert code == 0 and stderr == b""
    # The gate ran after each run, below every threshold: no worker, no record.
    stored = [json.loads(line) for line in (prism_home / "sessions.jsonl").read_text().splitlines()]
    assert [e for e in stored if e["kind"] == "custom"] == [
        e for e in seed_session(prism_home / "again") if e["kind"] == "custom"
    ]


def test_post_run_gate_records_coverage_with_the_session_model(
    rpc: Any, prism_home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "prism.json"
    config.write_text(json.dumps({"observational-memory": {"observeAfterTokens": 1}}))
    client = rpc("--session", "gated", "--memory", "observational", "--config", str(config))
    _, response = prompt(client, "p1", "I like green tea.")
    assert response["ok"]
    code, _, stderr = client.close()  # EOF waits for the gate to finish
    assert code == 0 and stderr == b""
    stored = [json.loads(line) for line in (prism_home / "sessions.jsonl").read_text().splitlines()]
    messages = [e for e in stored if e["kind"] == "message"]
    (record,) = [e for e in stored if e["kind"] == "custom"]
    # The echo mock records nothing, but the observer's coverage marker lands.
    assert record["data"] == {
        "type": "om.observations.recorded",
        "observations": [],
        "coversUpToId": messages[-1]["id"],
    }


def test_bad_memory_settings_and_flags_are_usage_errors(prism_run: Any, tmp_path: Path) -> None:
    config = tmp_path / "prism.json"
    config.write_text(json.dumps({"observational-memory": {"agentMaxTurns": 0}}))
    done = prism_run("--memory", "observational", "--config", str(config), "-p", "hi")
    assert done.returncode == 2
    assert b"agentMaxTurns must be an integer >= 1" in done.stderr
    done = prism_run("--memory", "semantic", "-p", "hi")
    assert (done.returncode, done.stderr) == (
        2,
        b"prism: error: --memory must be one of observational (got 'semantic')\n",
    )
    done = prism_run("--memory-model", "small", "-p", "hi")
    assert done.returncode == 2 and b"--memory-model needs --memory observational" in done.stderr
    done = prism_run("--memory", "observational", "--memory-model", "small", "-p", "hi")
    assert (done.returncode, done.stdout) == (0, b"Mock reply to: hi (turn 1)")


def test_without_memory_the_om_commands_do_not_exist(rpc: Any) -> None:
    client = rpc()
    response = command(client, "1", "om:status")
    assert response["ok"] is False
    assert response["error"]["code"] == "unknown_command"


class HostClient(RpcClient):
    """The host script instead of the prism executable."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HOST_SCRIPT), "--mode", "rpc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._start_reader()


def run_host(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(HOST_SCRIPT), "--mode", "rpc", *args],
        input=b"",
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


def test_host_and_extension_commands_reach_rpc_command(cli_env: dict[str, str]) -> None:
    client = HostClient(cli_env, "--memory", "observational")
    try:
        listed = command(client, "1", "commands")["result"]["commands"]
        assert [c["name"] for c in listed] == [
            "commands",
            "flags",
            "session.entries",
            "hello",
            "om:status",
            "om:view",
            "ext.echo",
        ]
        hello = command(client, "2", "hello", {"name": "Ada"})
        assert hello["ok"] and hello["result"]["hello"] == "Ada"
        echo = command(client, "3", "ext.echo", {"x": 1})
        assert echo["result"] == {"echo": {"x": 1}}
        assert command(client, "4", "om:status")["ok"]
        unknown = command(client, "5", "nope")
        assert unknown["error"]["code"] == "unknown_command"
        code, rest, stderr = client.close()
        assert (code, rest, stderr) == (0, [], b"")
    finally:
        client.kill()


def test_a_clashing_or_failing_contribution_is_a_usage_error(cli_env: dict[str, str]) -> None:
    clash = run_host(cli_env, "--clash")
    assert clash.returncode == 2
    assert b"command 'hello' is contributed twice" in clash.stderr
    broken = run_host(cli_env, "--broken")
    assert broken.returncode == 2
    assert b"extension 'broken-extension' failed to load (setup)" in broken.stderr
    assert b"this extension cannot start" in broken.stderr
