"""After a restart a worker asks which sessions hold an unfinished durable
run and resumes them all; a damaged one is reported and the others resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prism import create_agent, create_mock_provider, define_tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import ResumeAllReport
from prism.stores.jsonl import JsonlSessionStore

pytestmark = pytest.mark.anyio

MODEL = {"provider": "mock", "model": "m"}


class Killed(BaseException):
    """The process is gone: nothing more is written."""


class DyingStore(JsonlSessionStore):
    """Dies right after its ``after``-th append, as if SIGKILLed there."""

    def __init__(self, path: Path, after: int) -> None:
        super().__init__(path)
        self.after = after
        self.appends = 0

    async def append_many(self, entries: Any) -> None:
        self.appends += 1
        if self.appends > self.after:
            raise Killed
        await super().append_many(entries)
        if self.appends == self.after:
            raise Killed


def model(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("refunded"), provider_done()]
    if "refund" in str(request["messages"][-1]):
        return [provider_tool_call("c1", "refund", {}), provider_done("tool_calls")]
    return [provider_text_delta("done"), provider_done()]


def make_agent(store: Any) -> Any:
    refund = define_tool("refund", lambda args, ctx: "ok")  # not idempotent
    return create_agent(
        model=MODEL, provider=create_mock_provider(model), store=store, durable=True, tools=[refund]
    )


async def crash(path: Path, session_id: str, prompt: str, after: int) -> None:
    with pytest.raises(Killed):
        await make_agent(DyingStore(path, after)).create_session(session_id).run(prompt)


def damage_started_calls(path: Path, session_id: str) -> None:
    """The record of which calls started becomes unreadable."""
    lines = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        data = entry.get("data")
        if entry["sessionId"] == session_id and isinstance(data, dict):
            if "startedToolCallIds" in data:
                data["startedToolCallIds"] = "garbled"
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")


async def test_unfinished_sessions_and_resume_all(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    await crash(path, "a", "first job", after=1)
    await crash(path, "b", "second job", after=1)
    await crash(path, "bad", "refund it", after=3)  # killed after tool_start
    damage_started_calls(path, "bad")
    store = JsonlSessionStore(path)
    agent = make_agent(store)
    await agent.create_session("finished").run("all good")
    await create_agent(model=MODEL, provider=create_mock_provider(model), store=store).run(
        "plain", session_id="plain"
    )

    assert await agent.unfinished_sessions() == ["a", "b", "bad"]
    report = await agent.resume_all()
    assert isinstance(report, ResumeAllReport) and not report.ok
    assert sorted(report.resumed) == ["a", "b"]
    assert all(r is not None and r.text == "done" for r in report.resumed.values())
    assert list(report.failed) == ["bad"]
    assert report.failed["bad"]["code"] == "checkpoint_damaged"
    assert "cannot resume session 'bad'" in report.failed["bad"]["message"]
    assert await agent.unfinished_sessions() == ["bad"]
    assert json.dumps(report.to_json())  # JSON-ready


async def test_resume_all_of_named_sessions_and_nothing_to_do(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    await crash(path, "a", "first job", after=1)
    await crash(path, "b", "second job", after=1)
    agent = make_agent(JsonlSessionStore(path))
    report = await agent.resume_all(session_ids=["b"])
    assert list(report.resumed) == ["b"] and report.ok
    assert await agent.unfinished_sessions() == ["a"]
    empty = make_agent(JsonlSessionStore(tmp_path / "none.jsonl"))
    assert await empty.unfinished_sessions() == []
    assert (await empty.resume_all()).resumed == {}
