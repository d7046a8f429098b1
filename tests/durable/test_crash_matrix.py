"""The crash matrix: a child process runs the 6-turn durable scenario and is
SIGKILLed at one step boundary (after each store write, inside each tool
execution, at the start of each provider request, and in the middle of a
write), then this process resumes the session from the store.

After the resume the branch's messages equal an uninterrupted run's, except
that a non-idempotent call the crash interrupted is answered with an
``interrupted`` error; ``charge`` (not idempotent) ran at most once per
call and ``lookup`` (idempotent) at most twice; the frontier the resume
starts from equals the child's at the crash, and the frontier persisted at
the end equals the uninterrupted run's.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from durable_scenario import SESSION, comparable, executions, make_agent
from zygote import ZygoteClient

import prism
from prism.assembly.groups import tool_result_message
from prism.attention import restore_attention_frontier
from prism.runtime.durable_steps import interrupted_result
from prism.stores.jsonl import JsonlSessionStore
from prism.stores.sqlite import SqliteSessionStore

CHILD = Path(__file__).parent / "crash_child.py"
PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])
WRITES = 16  # store writes of one uninterrupted run (asserted by the baseline)
TOOLS = 6
TURNS = 6
STORES = {"jsonl": JsonlSessionStore, "sqlite": SqliteSessionStore}


@dataclass
class Baseline:
    messages: list[Any]
    batches: list[list[Any]]
    order: list[str]  # tool call ids in execution order
    calls: dict[str, Any]
    frontier: Any


_baselines: dict[str, Baseline] = {}


def baseline(kind: str, tmp: Path) -> Baseline:
    """One uninterrupted in-process run per store kind, recording each write."""
    if kind in _baselines:
        return _baselines[kind]
    batches: list[list[Any]] = []

    class Recording(STORES[kind]):  # type: ignore[misc,valid-type]
        async def append_many(self, entries: Any) -> None:
            batches.append([dict(e) for e in entries])
            await super().append_many(entries)

    path = tmp / f"baseline.{kind}"
    counts = tmp / f"baseline.{kind}.counts"
    session = make_agent(Recording(str(path)), counts).create_session(SESSION)
    result = anyio.run(lambda: session.run("run the billing job"))
    assert result.text == "all done"
    entries = anyio.run(session.branch_entries)
    assert len(batches) == WRITES
    order = [line.split(" ", 1)[1] for line in counts.read_text().splitlines()]
    assert len(order) == TOOLS
    calls = {
        block["id"]: block
        for m in comparable(entries)
        if m["role"] == "assistant"
        for block in m["content"]
        if block["type"] == "tool_call"
    }
    frontier = restore_attention_frontier(entries)
    assert frontier is not None and frontier.to_json()["toolCallIds"]  # the gate tripped
    made = Baseline(comparable(entries), batches, order, calls, frontier.to_json())
    _baselines[kind] = made
    return made


def interrupted_call(kind: str, what: str, n: int, base: Baseline) -> str | None:
    """The non-idempotent call a kill leaves "started without a result"."""
    if what == "tool":
        call_id = base.order[n - 1]
        return call_id if base.calls[call_id]["name"] == "charge" else None
    batch = base.batches[n - 1]
    if what == "write" and len(batch) == 1 and batch[0]["data"]["phase"] == "tool_start":
        (call_id,) = batch[0]["data"]["startedToolCallIds"]
        return str(call_id)
    if what == "torn":
        # The call ran but its result (and the checkpoint after it) was torn off.
        for entry in batch:
            message = entry.get("message") or {}
            if message.get("role") == "tool":
                call_id = message["content"][0]["toolCallId"]
                if base.calls[call_id]["name"] == "charge":
                    return str(call_id)
    return None


def expected_messages(base: Baseline, interrupted: str | None) -> list[Any]:
    if interrupted is None:
        return base.messages
    call = base.calls[interrupted]
    replaced = tool_result_message(
        interrupted_result({"id": call["id"], "name": call["name"], "arguments": call["arguments"]})
    )
    return [
        replaced if m["role"] == "tool" and m["content"][0]["toolCallId"] == interrupted else m
        for m in base.messages
    ]


CASES = [
    *[("jsonl", "write", n) for n in range(1, WRITES + 1)],
    *[("jsonl", "tool", n) for n in range(1, TOOLS + 1)],
    *[("jsonl", "provider", n) for n in range(1, TURNS + 1)],
    *[("jsonl", "torn", n) for n in (2, 4, 9, 16)],
    *[("sqlite", "write", n) for n in range(1, WRITES + 1)],
    *[("sqlite", "tool", n) for n in range(1, TOOLS + 1)],
]


@pytest.fixture(scope="module")
def zygote() -> Iterator[ZygoteClient]:
    # crash_child.py --serve: each case's child is forked from one process
    # that has imported Prism and the scenario already (most of its CPU time).
    server = ZygoteClient([sys.executable, str(CHILD), "--serve"], PYTHON_DIR)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(("kind", "what", "n"), CASES, ids=[f"{k}-{w}{n}" for k, w, n in CASES])
def test_killed_run_resumes_to_the_uninterrupted_result(
    kind: str,
    what: str,
    n: int,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    zygote: ZygoteClient,
) -> None:
    base = baseline(kind, tmp_path_factory.getbasetemp())
    path = tmp_path / f"session.{kind}"
    counts = tmp_path / "counts"
    frontier_at_crash = tmp_path / "frontier.json"
    returncode, output = zygote.run(
        tmp_path / "child.out",
        kind,
        str(path),
        str(counts),
        f"{what}:{n}",
        str(frontier_at_crash),
    )
    assert returncode == -signal.SIGKILL, output[-2000:]

    session = make_agent(STORES[kind](str(path)), counts).create_session(SESSION)
    restored: list[Any] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "run_started":
            sticky = session.attention_sticky
            restored.append(sticky.to_json() if sticky is not None else None)
        assert event["type"] != "checkpoint_warning", event

    session.subscribe(on_event)
    result = anyio.run(session.resume)
    entries = anyio.run(session.branch_entries)

    if what == "write" and n == WRITES:
        assert result is None  # the run had finished: resuming is a no-op
    else:
        assert result is not None and result.text == "all done"
    interrupted = interrupted_call(kind, what, n, base)
    assert comparable(entries) == expected_messages(base, interrupted)

    ran = executions(counts)
    for call_id, call in base.calls.items():
        limit = 2 if call["name"] == "lookup" else 1
        assert ran.get(call_id, 0) <= limit, (call_id, ran)
        if call_id != interrupted:
            assert ran.get(call_id, 0) >= 1, (call_id, ran)
    if interrupted is not None and what == "write":
        assert ran.get(interrupted, 0) == 0  # marked started, killed before it ran

    if what in ("write", "tool") and restored:
        # The resumed run starts from the frontier the child had at the crash.
        assert restored == [json.loads(frontier_at_crash.read_text())]
    if interrupted is None:
        final = restore_attention_frontier(entries)
        assert final is not None and final.to_json() == base.frontier
