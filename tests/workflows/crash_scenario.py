"""The workflow the crash tests kill: shared by the child process and the test.

``prepare`` (plain Python, not idempotent) -> ``work`` (an agent step: one
durable run that calls the non-idempotent ``charge`` tool, then answers)
-> ``check`` -> ``gate`` -> ``finish`` (compacts the agent's session) ->
END. Every execution of ``prepare``, ``charge`` and ``check`` appends a line
to a side file, so the test counts executions across processes. The mock
provider is a pure function of the request, so a resumed process continues
the same conversation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.tools import define_tool
from prism.workflows import END, Route, StepContext, Workflow, loop

OUTPUT = "A-17: charged 2500"


class Order(BaseModel):
    id: str
    cents: int


class Charged(BaseModel):
    order: Order
    answer: str


class Verdict(BaseModel):
    ok: bool
    charged: Charged


def count_line(path: Path, text: str) -> None:
    # O_APPEND + one write: on disk before the step returns, so a kill right
    # after it still counts the execution.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("charged 2500"), provider_done()]
    return [provider_tool_call("call_1", "charge", {"cents": 2500}), provider_done()]


def build(store: Any, counts: Path, workflow_id: str) -> Workflow:
    """``workflow_id``'s agent session is ``<workflow_id>-agent`` (ids are
    unique per case: PostgreSQL's advisory-lock leases span schemas)."""

    def charge(args: dict[str, Any], ctx: Any) -> str:
        count_line(counts, "charge")
        return f"charged {args['cents']}"

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[define_tool("charge", charge, idempotent=False)],
        store=store,
    )
    flow = Workflow("charge-order")

    @flow.step(next="work")
    def prepare(order: Order) -> Order:
        count_line(counts, "prepare")
        return Order(id=order.id, cents=order.cents * 2)

    @flow.agent(next="check")
    async def work(ctx: StepContext, order: Order) -> Charged:
        session = agent.create_session(f"{workflow_id}-agent")
        result = await ctx.run_agent(session, f"charge {order.cents} for {order.id}")
        return Charged(order=order, answer=result.text)

    @flow.check(next="gate")
    def check(charged: Charged) -> Verdict:
        count_line(counts, "check")
        return Verdict(ok=charged.answer.startswith("charged"), charged=charged)

    @flow.gate(routes={"retry": loop(work, max=1), "ok": "finish"})
    def gate(verdict: Verdict) -> Route:
        if verdict.ok:
            return Route("ok", verdict.charged)
        return Route("retry", verdict.charged.order)

    @flow.compaction(next=END)
    async def finish(ctx: StepContext, charged: Charged) -> str:
        await ctx.compact(agent.create_session(f"{workflow_id}-agent"))
        return f"{charged.order.id}: {charged.answer}"

    return flow
