"""``prism --mode rpc`` driven interactively: one request line at a time,
reading until the expected response. Runs that must still be active when the
next request arrives use a mock delay far longer than any test (the run is
then aborted, which cancels the delay at once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPLY = "Mock reply to: {} (turn {})"
STALL = ("--mock-delay-ms", "600000")  # a run that only ends by abort


def start_stalled_run(client: Any, request_id: str, text: str = "Hi") -> dict[str, Any]:
    """Start a prompt that stays active; returns its run_started envelope."""
    client.send({"id": request_id, "command": "prompt", "params": {"input": text}})
    return client.until_event(request_id, "run_started")  # type: ignore[no-any-return]


def test_prompt_streams_tagged_events_then_answers(rpc: Any) -> None:
    client = rpc()
    client.send({"id": "1", "command": "prompt", "params": {"input": "Hi"}})
    events, response = client.until_response("1")
    assert response["ok"] is True
    result = response["result"]
    assert result["text"] == REPLY.format("Hi", 1)
    assert result["stopReason"] == "stop"
    for envelope in events:
        assert set(envelope) == {"type", "id", "sessionId", "runId", "event"}
        assert envelope["type"] == "event" and envelope["id"] == "1"
        assert envelope["sessionId"] == result["sessionId"]
        assert envelope["runId"] == result["runId"]
    types = [e["event"]["type"] for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    code, rest, stderr = client.close()
    assert (code, rest, stderr) == (0, [], b"")


def test_numeric_ids_are_echoed(rpc: Any) -> None:
    client = rpc()
    assert client.request({"id": 7, "command": "state"})["id"] == 7
    assert client.request({"id": 2.5, "command": "state"})["id"] == 2.5


def test_requests_are_answered_while_a_run_streams(rpc: Any) -> None:
    client = rpc(*STALL)
    started = start_stalled_run(client, "run-1")
    session_id = started["sessionId"]

    state = client.request({"id": "s", "command": "state"})
    assert state["ok"] is True
    assert state["result"]["isRunning"] is True
    assert state["result"]["activeRuns"] == [session_id]

    messages = client.request({"id": "m", "command": "messages"})
    assert messages["ok"] is True
    assert messages["result"]["messages"][0]["content"][0]["text"] == "Hi"

    model = client.request({"id": "sm", "command": "setModel", "params": {"model": "other"}})
    assert model["ok"] is True
    assert model["result"]["model"] == {"provider": "mock", "model": "other"}

    command = client.request({"id": "c", "command": "command", "params": {"name": "commands"}})
    assert command["ok"] is True

    # abort answers at once; the prompt then ends ok:false with the abort error
    client.send({"id": "abort-1", "command": "abort", "params": {"reason": "stop"}})
    before, abort = client.until_response("abort-1")
    assert abort == {
        "id": "abort-1",
        "ok": True,
        "result": {"sessionId": session_id, "aborted": True},
    }
    events, final = client.until_response("run-1")
    assert final["ok"] is False
    assert final["error"]["message"] == "Agent run aborted"
    assert final["error"]["code"] == "aborted"
    error_events = [e for e in before + events if e.get("event", {}).get("type") == "error"]
    assert len(error_events) == 1
    assert error_events[0]["id"] == "run-1"  # tagged with the prompt's id, not abort's
    assert error_events[0]["event"]["error"]["message"] == "Agent run aborted"

    # the session is usable again and the model override applies
    after = client.request({"id": "s2", "command": "state"})
    assert after["result"]["isRunning"] is False
    assert after["result"]["model"]["model"] == "other"


def test_second_prompt_and_follow_up_on_a_busy_session_fail_at_once(rpc: Any) -> None:
    client = rpc(*STALL)
    start_stalled_run(client, "run-1")
    for request_id, command in (("p2", "prompt"), ("f2", "followUp")):
        response = client.request({"id": request_id, "command": command, "params": {"input": "x"}})
        assert response["ok"] is False
        assert response["error"]["code"] == "session_busy"
    compact = client.request({"id": "k", "command": "compact"})
    assert compact["ok"] is False
    assert compact["error"]["code"] == "session_busy"
    steer = client.request({"id": "st", "command": "steer", "params": {"input": "faster"}})
    assert steer["ok"] is True
    client.request({"id": "a", "command": "abort"})
    _, final = client.until_response("run-1")
    assert final["ok"] is False
    # nothing from the refused requests reached the session
    messages = client.request({"id": "m", "command": "messages"})["result"]["messages"]
    texts = [m["content"][0]["text"] for m in messages]
    assert "x" not in texts


def test_follow_up_on_an_idle_session_runs_a_turn(rpc: Any) -> None:
    client = rpc()
    client.send({"id": "1", "command": "prompt", "params": {"input": "one"}})
    client.until_response("1")
    client.send({"id": "2", "command": "followUp", "params": {"input": "two"}})
    _, response = client.until_response("2")
    assert response["ok"] is True
    assert response["result"]["text"] == REPLY.format("two", 2)


def test_steer_and_abort_without_an_active_run(rpc: Any) -> None:
    client = rpc()
    steer = client.request({"id": "1", "command": "steer", "params": {"input": "x"}})
    assert steer["ok"] is False and steer["error"]["code"] == "no_active_run"
    abort = client.request({"id": "2", "command": "abort"})
    assert abort["ok"] is True and abort["result"]["aborted"] is False


def test_failed_run_answers_ok_false(rpc: Any) -> None:
    client = rpc()
    client.send({"id": "e", "command": "prompt", "params": {"input": "mock:error"}})
    events, response = client.until_response("e")
    assert response["ok"] is False
    assert response["error"]["code"] == "mock_error"
    assert events[-1]["event"]["type"] == "error"


def test_compact_when_idle(rpc: Any) -> None:
    client = rpc()
    for n in range(3):
        client.send({"id": f"p{n}", "command": "prompt", "params": {"input": f"turn {n}"}})
        client.until_response(f"p{n}")
    response = client.request({"id": "k", "command": "compact", "params": {"keepRecentEntries": 2}})
    assert response["ok"] is True, response
    assert response["result"]["entryId"]
    bad = client.request({"id": "k2", "command": "compact", "params": {"keep": 1}})
    assert bad["ok"] is False and "keep" in bad["error"]["message"]


def test_switch_fork_and_clone_sessions(rpc: Any) -> None:
    client = rpc("--session", "main")
    client.send({"id": "p", "command": "prompt", "params": {"input": "hello"}})
    _, done = client.until_response("p")
    assert done["result"]["sessionId"] == "main"

    switched = client.request(
        {"id": "sw", "command": "switchSession", "params": {"sessionId": "other"}}
    )
    assert switched["result"] == {"sessionId": "other", "leafId": None, "entryCount": 0}
    back = client.request({"id": "sb", "command": "switchSession", "params": {"sessionId": "main"}})
    assert back["result"]["entryCount"] == 2

    clone = client.request({"id": "cl", "command": "cloneSession"})
    assert clone["ok"] is True
    assert clone["result"]["sessionId"] != "main"
    assert clone["result"]["entryCount"] == 2

    client.request({"id": "sb2", "command": "switchSession", "params": {"sessionId": "main"}})
    entries = client.request(
        {"id": "en", "command": "command", "params": {"name": "session.entries"}}
    )["result"]["entries"]
    fork = client.request(
        {
            "id": "fk",
            "command": "forkSession",
            "params": {"entryId": entries[0]["id"], "sessionId": "forked"},
        }
    )
    assert fork["result"] == {
        "sessionId": "forked",
        "leafId": fork["result"]["leafId"],
        "entryCount": 1,
    }
    # the fork continues from the first user message only
    client.send({"id": "p2", "command": "prompt", "params": {"input": "again"}})
    _, again = client.until_response("p2")
    assert again["result"]["text"] == REPLY.format("again", 2)

    unknown = client.request(
        {"id": "fx", "command": "forkSession", "params": {"entryId": "entry_missing"}}
    )
    assert unknown["ok"] is False
    missing = client.request({"id": "sx", "command": "switchSession", "params": {}})
    assert missing["ok"] is False
    code, _, _ = client.close()
    assert code == 0


def test_runs_on_two_sessions_stream_concurrently_without_interleaving(rpc: Any) -> None:
    client = rpc("--mock-delay-ms", "1")
    client.send({"id": "a", "command": "prompt", "params": {"input": "alpha " * 20}})
    client.until_event("a", "run_started")
    client.request({"id": "sw", "command": "switchSession", "params": {"sessionId": "second"}})
    client.send({"id": "b", "command": "prompt", "params": {"input": "beta " * 20}})
    finals: dict[str, dict[str, Any]] = {}
    while len(finals) < 2:
        message = client.next_message()
        if "ok" in message:
            finals[message["id"]] = message
    assert finals["a"]["ok"] and finals["b"]["ok"]
    assert finals["b"]["result"]["sessionId"] == "second"
    # every line the process wrote was one complete JSON value
    for raw in client.raw:
        assert raw.count(b"\n") == 1
        json.loads(raw)


def test_eof_lets_active_runs_finish_and_exits_0(rpc: Any) -> None:
    client = rpc("--mock-delay-ms", "5")
    client.send({"id": "last", "command": "prompt", "params": {"input": "bye"}})
    code, rest, stderr = client.close()
    assert code == 0 and stderr == b""
    assert rest[-1]["id"] == "last" and rest[-1]["ok"] is True
    assert rest[-1]["result"]["text"] == REPLY.format("bye", 1)


def test_eof_without_requests_exits_0_silently(rpc: Any) -> None:
    assert rpc().close() == (0, [], b"")


def test_rpc_session_is_persisted(rpc: Any, prism_home: Path, prism_run: Any) -> None:
    client = rpc("--session", "kept")
    client.send({"id": "1", "command": "prompt", "params": {"input": "remember"}})
    client.until_response("1")
    assert client.close()[0] == 0
    result = prism_run("--session", "kept", "-p", "again")
    assert result.stdout == REPLY.format("again", 2).encode()


def test_config_values_reach_the_session(rpc: Any, tmp_path: Path) -> None:
    config = tmp_path / "prism.json"
    config.write_text(json.dumps({"model": "from-config", "maxToolRounds": 3, "other": {}}))
    client = rpc("--config", str(config))
    assert client.request({"id": 1, "command": "state"})["result"]["model"]["model"] == (
        "from-config"
    )
    flags = client.request({"id": 2, "command": "command", "params": {"name": "flags"}})
    assert flags["result"]["config"] == str(config)
    overridden = rpc("--config", str(config), "--model", "from-flag")
    assert overridden.request({"id": 1, "command": "state"})["result"]["model"]["model"] == (
        "from-flag"
    )


def test_steer_sent_with_the_prompt_reaches_the_first_turn(rpc: Any) -> None:
    # The steer is read before the run is open; the CLI holds it until
    # run_started, and the runtime injects it before the first provider turn.
    client = rpc("--mock-delay-ms", "1")
    client.send_raw(
        b'{"id":"p","command":"prompt","params":{"input":"one"}}\n'
        b'{"id":"s","command":"steer","params":{"input":"two"}}\n'
    )
    _, steer = client.until_response("s")
    assert steer["ok"] is True
    _, final = client.until_response("p")
    assert final["result"]["text"] == REPLY.format("two", 2)
    bad = client.request({"id": "b", "command": "steer", "params": {"input": 5}})
    assert bad["ok"] is False


def test_a_real_preset_is_wired_from_its_env_var_without_leaking_it(
    rpc: Any, cli_env: dict[str, str]
) -> None:
    # No prompt is sent, so no request leaves the machine; the preset's
    # provider and default model are built from OPENAI_API_KEY.
    canary = "sk-canary-cli-0123456789abcdef"
    cli_env["OPENAI_API_KEY"] = canary  # the rpc factory reads this same dict
    client = rpc("--provider", "openai")
    state = client.request({"id": 1, "command": "state"})
    assert state["result"]["model"]["provider"] == "openai"
    assert state["result"]["model"]["model"] == "gpt-4.1-mini"
    # setModel picks up the preset's metadata for the new model
    changed = client.request({"id": 2, "command": "setModel", "params": {"model": "gpt-5"}})
    assert changed["result"]["model"]["limits"]["contextWindow"] == 400_000
    code, _, stderr = client.close()
    assert code == 0
    assert all(canary.encode() not in raw for raw in client.raw)
    assert canary.encode() not in stderr


def test_set_model_switches_provider_and_back(rpc: Any, cli_env: dict[str, str]) -> None:
    canary = "sk-canary-switch-0123456789abcdef"
    cli_env["OPENAI_API_KEY"] = canary
    client = rpc()
    client.send({"id": "p1", "command": "prompt", "params": {"input": "one"}})
    client.until_response("p1")
    switched = client.request(
        {
            "id": "m1",
            "command": "setModel",
            "params": {"model": {"model": "gpt-5", "provider": "openai"}},
        }
    )
    assert switched["ok"] is True, switched
    assert switched["result"]["model"]["provider"] == "openai"
    assert switched["result"]["model"]["limits"]["contextWindow"] == 400_000
    state = client.request({"id": "s1", "command": "state"})["result"]
    assert state["model"]["provider"] == "openai" and state["entryCount"] == 3  # same session
    unknown = client.request(
        {"id": "m2", "command": "setModel", "params": {"model": {"model": "x", "provider": "nope"}}}
    )
    assert unknown["ok"] is False and "unknown provider 'nope'" in unknown["error"]["message"]
    back = client.request(
        {
            "id": "m3",
            "command": "setModel",
            "params": {"model": {"model": "echo", "provider": "mock"}},
        }
    )
    assert back["ok"] is True
    client.send({"id": "p2", "command": "prompt", "params": {"input": "two"}})
    _, done = client.until_response("p2")
    assert done["ok"] is True and done["result"]["text"].startswith("Mock reply to: two")
    code, _, stderr = client.close()
    assert code == 0
    assert all(canary.encode() not in raw for raw in client.raw)
    assert canary.encode() not in stderr


def test_abort_sent_with_the_prompt_reaches_the_run(rpc: Any) -> None:
    # Both lines arrive together; the prompt has claimed its session before
    # the abort is read, so the abort lands (no pending-flag workaround).
    client = rpc(*STALL)
    client.send_raw(
        b'{"id":"p","command":"prompt","params":{"input":"one"}}\n'
        b'{"id":"a","command":"abort","params":{"reason":"changed my mind"}}\n'
    )
    _, abort = client.until_response("a")
    assert abort["ok"] is True and abort["result"]["aborted"] is True
    _, final = client.until_response("p")
    assert final["ok"] is False and final["error"]["code"] == "aborted"
    state = client.request({"id": "s", "command": "state"})["result"]
    assert state["isRunning"] is False and state["activeRuns"] == []
