"""The supervisor scenarios shared by the in-process tests and the child
processes that start and resume a parent.

Parent: a durable agent whose first turn delegates (one tool round, calls
in parallel) and whose next turn reports every delegation's result as JSON.
Children, each on its own mock provider (a pure function of the request,
so any process continues the same conversation):

- ``failer``: its provider fails, so its run fails;
- ``aborter``: its tool aborts its own delegation through the supervisor,
  then waits (the abort cancels it);
- ``approver``: its ``publish`` tool needs approval, then it answers;
- ``worker``: its ``step`` tool runs (``on_step`` may kill the process);
- ``quick``: answers at once.

Every factory call and tool execution appends a line to a side file, so
re-runs are counted across processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from prism.approvals import requires_approval
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.subagents import ChildContext, ChildSpec, Supervisor, create_supervisor
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}
PARENT = "lead-1"
THREE = [("call_fail", "failer"), ("call_abort", "aborter"), ("call_approve", "approver")]


def count_line(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def lines(path: Path, prefix: str) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.startswith(prefix)]


def turn_count(request: Any) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def tool_results(request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for message in request["messages"]:
        if message["role"] == "tool":
            for block in message["content"]:
                out[block["toolCallId"]] = {
                    "error": bool(block.get("isError")),
                    "result": block.get("result"),
                }
    return out


def parent_script(calls: list[tuple[str, str]]) -> Callable[[Any], list[Any]]:
    def script(request: Any) -> list[Any]:
        if turn_count(request) == 0:
            return [
                *(
                    provider_tool_call(cid, "delegate", {"child": c, "task": f"do {c}"})
                    for cid, c in calls
                ),
                provider_done("tool_use"),
            ]
        return [provider_text_delta(json.dumps(tool_results(request))), provider_done("stop")]

    return script


def child_script(tool: str | None, answer: str) -> Callable[[Any], list[Any]]:
    def script(request: Any) -> list[Any]:
        if tool is not None and turn_count(request) == 0:
            return [provider_tool_call(f"{tool}_1", tool, {}), provider_done("tool_use")]
        results = tool_results(request)
        return [provider_text_delta(answer + json.dumps(results, sort_keys=True)), provider_done()]

    return script


def failing_script(_request: Any) -> list[Any]:
    return [provider_error("the child's provider is down", code="provider_down")]


class Scenario:
    """Builds the supervisor and the parent agent on ``store``."""

    def __init__(self, store: Any, counts: Path, on_step: Callable[[], Any] | None = None) -> None:
        self.store, self.counts, self.on_step = store, counts, on_step
        self.supervisor: Supervisor = create_supervisor(
            children={
                "failer": ChildSpec(self.factory("failer"), "always fails"),
                "aborter": ChildSpec(self.factory("aborter"), "gets aborted"),
                "approver": ChildSpec(self.factory("approver"), "publishes after approval"),
                "worker": ChildSpec(self.factory("worker"), "runs one step"),
                "quick": ChildSpec(self.factory("quick"), "answers at once"),
            },
            max_concurrency=4,
        )

    def factory(self, name: str) -> Callable[[ChildContext], Agent]:
        def create(ctx: ChildContext) -> Agent:
            count_line(self.counts, f"spawn {name} resumed={ctx.resumed}")
            return self.child_agent(name)

        return create

    def child_agent(self, name: str) -> Agent:
        tools: list[Any] = []
        tool: str | None = None
        provider: Any
        if name == "failer":
            provider = create_mock_provider(failing_script)
        elif name == "aborter":
            tool = "hang"
            tools = [define_tool("hang", self.hang)]
            provider = create_mock_provider(child_script(tool, "unreachable"))
        elif name == "approver":
            tool = "publish"
            tools = [requires_approval(define_tool("publish", self.publish))]
            provider = create_mock_provider(child_script(tool, "published "))
        elif name == "worker":
            tool = "step"
            tools = [define_tool("step", self.step)]
            provider = create_mock_provider(child_script(tool, "worked "))
        else:
            provider = create_mock_provider(child_script(None, "quick answer "))
        return create_agent(model=MODEL, provider=provider, tools=tools, store=self.store)

    async def hang(self, _args: dict[str, Any], ctx: Any) -> str:
        count_line(self.counts, "tool hang")
        self.supervisor.abort(ctx.session_id, "stopped by the test")
        await anyio.sleep_forever()
        return "never"

    def publish(self, _args: dict[str, Any], _ctx: Any) -> str:
        count_line(self.counts, "tool publish")
        return "post-42"

    async def step(self, _args: dict[str, Any], _ctx: Any) -> str:
        count_line(self.counts, "tool step")
        if self.on_step is not None:
            await self.on_step()
        return "step done"

    def parent(self, calls: list[tuple[str, str]]) -> Agent:
        return create_agent(
            model=MODEL,
            provider=create_mock_provider(parent_script(calls)),
            tools=[self.supervisor.tool],
            store=self.store,
            durable=True,
            tool_concurrency=4,
        )
