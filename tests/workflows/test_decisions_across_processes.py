"""A workflow paused for a human resumes with the decision from another
process: once for an approval its agent run asked for (a tool wrapped in
``requires_approval``), once for its own decision step. The other process
is a real one (forked) that opens the same JSONL store."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import anyio

from prism.approvals import ApprovalDecision, requires_approval
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores import create_jsonl_session_store
from prism.tools import define_tool
from prism.workflows import END, StepContext, Workflow, resume_workflow, run_workflow

WORKFLOW_ID = "ticket-17"


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("refunded"), provider_done()]
    return [provider_tool_call("call_r", "refund", {"cents": 9000}), provider_done()]


def build(path: Path) -> tuple[Workflow, Any]:
    store = create_jsonl_session_store(path / "s.jsonl")

    def refund(args: dict[str, Any], ctx: Any) -> str:
        with (path / "refunds").open("a") as out:
            out.write(f"{args['cents']}\n")
        return "refund sent"

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[requires_approval(define_tool("refund", refund), reason="refunds need a human")],
        store=store,
    )
    flow = Workflow("ticket")

    @flow.agent(next="close")
    async def handle(ctx: StepContext, ticket: str) -> str:
        result = await ctx.run_agent(agent.create_session(f"{WORKFLOW_ID}-agent"), ticket)
        return result.text

    @flow.decision(question=lambda answer: f"close the ticket? ({answer})", next=END)
    def close(answer: str, decision: ApprovalDecision) -> str:
        return f"{answer}; closed={decision.kind == 'approve'}"

    return flow, store


def other_process(path: Path, decisions: dict[str, Any]) -> None:
    async def main() -> None:
        flow, store = build(path)
        result = await resume_workflow(
            flow, store=store, workflow_id=WORKFLOW_ID, decisions=decisions
        )
        (path / "child.json").write_text(
            json.dumps({"status": result.status, "pending": result.pending_approvals})
        )

    anyio.run(main)


def resume_elsewhere(path: Path, decisions: dict[str, Any]) -> dict[str, Any]:
    child = multiprocessing.get_context("fork").Process(
        target=other_process, args=(path, decisions)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    result: dict[str, Any] = json.loads((path / "child.json").read_text())
    return result


def test_decisions_from_another_process_resume_the_workflow(tmp_path: Path) -> None:
    # Not an async test: the other process is forked, never from inside a running loop.
    flow, store = build(tmp_path)
    paused = anyio.run(
        lambda: run_workflow(flow, "refund order A-17", store=store, workflow_id=WORKFLOW_ID)
    )
    assert paused.paused
    (approval,) = paused.pending_approvals
    assert approval["tool"] == "refund" and approval["step"] == "handle"
    assert approval["sessionId"] == f"{WORKFLOW_ID}-agent"
    assert not (tmp_path / "refunds").exists()

    child = resume_elsewhere(tmp_path, {approval["id"]: True})
    assert child["status"] == "paused"
    (question,) = child["pending"]
    assert question["step"] == "close" and question["reason"] == "close the ticket? (refunded)"
    assert (tmp_path / "refunds").read_text() == "9000\n"

    done = anyio.run(
        lambda: resume_workflow(
            flow, store=store, workflow_id=WORKFLOW_ID, decisions={question["id"]: "approve"}
        )
    )
    assert done.output == "refunded; closed=True"
    assert (tmp_path / "refunds").read_text() == "9000\n"  # the approved refund ran once
