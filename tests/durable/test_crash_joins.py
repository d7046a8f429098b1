"""The crash matrix's cases from issue 34: a real child process is SIGKILLed
at a chosen write, then this process goes on with the session file.

* a damaged last checkpoint (a malformed started-calls list, or the line
  quarantined) makes ``resume()`` refuse instead of running a
  non-idempotent tool twice;
* a plain run after a durable crash closes the unfinished run first and
  never sends a tool call without its result;
* the tool-round counters and an accepted structured output survive the
  crash;
* a dropped durable stream's closing lands before the next run's input,
  even when the process dies during that next run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from durable_scenario import SESSION, executions, make_agent, script

import prism
from prism.errors import CheckpointDamagedError, MaxToolRoundsError
from prism.providers import create_mock_provider
from prism.runtime import create_agent
from prism.stores.jsonl import JsonlSessionStore

HERE = Path(__file__).parent
PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])


def kill_child(child: str, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(HERE / child), *args],
        env={**os.environ, "PYTHONPATH": PYTHON_DIR},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]


def unpaired(messages: list[Any]) -> list[str]:
    answered = {
        b["toolCallId"]
        for m in messages
        if m["role"] == "tool"
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    return [
        b["id"]
        for m in messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_call" and b["id"] not in answered
    ]


# --- a damaged checkpoint -----------------------------------------------------------


def _malformed(line: str) -> str:
    entry = json.loads(line)
    entry["data"]["startedToolCallIds"] = 5
    return json.dumps(entry)


def _garbled(line: str) -> str:
    return line[: len(line) // 3] + "\x00garbage"


@pytest.mark.parametrize("damage", [_malformed, _garbled], ids=["malformed", "quarantined"])
def test_a_damaged_last_checkpoint_refuses_the_resume(damage: Any, tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    # Killed inside the first ``charge`` (not idempotent): its tool_start
    # checkpoint is the file's last line.
    kill_child("crash_child.py", "jsonl", str(path), str(counts), "tool:1")
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["data"]["phase"] == "tool_start"
    path.write_text("\n".join([*lines[:-1], damage(lines[-1])]) + "\n")

    session = make_agent(JsonlSessionStore(str(path)), counts).create_session(SESSION)
    with pytest.raises(CheckpointDamagedError) as caught:
        anyio.run(session.resume)

    assert "'crash'" in str(caught.value) and "'call_0_0'" in str(caught.value)
    assert executions(counts) == {"call_0_0": 1}  # never run a second time
    assert not session.is_running


# --- a plain run after a durable crash ----------------------------------------------


@pytest.mark.parametrize("kill", ["tool:1", "write:2", "tool:3"])
def test_a_plain_run_after_a_durable_crash_closes_it_first(kill: str, tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    kill_child("crash_child.py", "jsonl", str(path), str(counts), kill)
    requests: list[Any] = []

    def plain_script(request: Any) -> Any:
        requests.append(request)
        return script({"messages": [{"role": "assistant"}] * 9})  # the answer

    store = JsonlSessionStore(str(path))
    plain = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(plain_script),
        store=store,
    )
    result = anyio.run(lambda: plain.create_session(SESSION).run("something else"))

    assert result.text == "all done"
    assert unpaired(requests[-1]["messages"]) == []
    ran_before = executions(counts)
    durable = make_agent(JsonlSessionStore(str(path)), counts).create_session(SESSION)
    assert anyio.run(durable.resume) is None  # the crashed run was closed
    assert executions(counts) == ran_before


# --- counters and structured output across a crash -------------------------------


def _joins(scenario: str, kill: str, tmp_path: Path) -> tuple[Any, Path, Path]:
    sys.path.insert(0, str(HERE))
    import joins_child

    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    kill_child("joins_child.py", scenario, str(path), str(counts), kill)
    return joins_child, path, counts


def test_max_tool_rounds_counts_the_rounds_before_the_crash(tmp_path: Path) -> None:
    child, path, counts = _joins("rounds", "7", tmp_path)  # after round 2's result
    assert len(executions(counts)) == 2
    agent = child.make_agent("rounds", JsonlSessionStore(str(path)), counts)
    with pytest.raises(MaxToolRoundsError):
        anyio.run(agent.create_session(child.SESSION).resume)
    assert len(executions(counts)) == 4  # the limit is 4 for the whole run


def test_an_accepted_structured_output_survives_the_crash(tmp_path: Path) -> None:
    # Killed right after the write holding the accepted final_result answer.
    child, path, counts = _joins("output", "5", tmp_path)
    asked: list[Any] = []

    def script_after(request: Any) -> Any:
        asked.append(request)
        return child.output_script(request)

    agent = child.make_agent("output", JsonlSessionStore(str(path)), counts, script_after)
    session = agent.create_session(child.SESSION)
    result = anyio.run(lambda: session.resume(output_type=child.Answer))

    assert result is not None
    assert result.output == child.Answer(city="Oslo", population=700001)
    assert result.tool_rounds == 2
    assert asked == []  # the accepted answer is not asked for again


# --- a dropped durable stream, then a crash during the next run --------------------


def test_a_dropped_streams_closing_precedes_the_next_runs_input(tmp_path: Path) -> None:
    child, path, counts = _joins("dropped", "next", tmp_path)
    requests: list[Any] = []

    def watching(request: Any) -> Any:
        requests.append(request)
        return child.dropped_script(request)

    store = JsonlSessionStore(str(path))
    agent = child.make_agent("dropped", store, counts, watching, parent=True)
    session = agent.create_session(child.SESSION)
    result = anyio.run(session.resume)

    assert result is not None and result.text == "all done"
    messages = anyio.run(session.messages)
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",  # the dropped run's closing: before the next input
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert messages[2]["content"][0]["result"]["code"] == "run_ended"
    assert all(unpaired(r["messages"]) == [] for r in requests)
    assert executions(counts) == {"call_slow": 1, "call_next": 1}
