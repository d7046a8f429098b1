"""Sub-agents: a lead agent delegates to an explorer and a reviewer in
parallel; the reviewer's comment needs a human, so the lead pauses and is
resumed with the approval.

Each child is an agent session of its own on the lead's SQLite store,
linked to the lead's session and tool call. The explorer answers at once;
the reviewer's ``post_comment`` needs approval, which surfaces on the
lead's result. The lead is then resumed from a fresh supervisor and agent
(as a new process would): the explorer is not run again, the reviewer
resumes from its own checkpoint and posts once.

Run: .venv/bin/python examples/subagents.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism.approvals import requires_approval
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.stores import create_sqlite_session_store
from prism.subagents import Budget, ChildContext, ChildSpec, DelegationOutcome, create_supervisor
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}


def lead_model(request: Any) -> list[Any]:
    """Delegate both tasks in one turn, then report what came back."""
    results = [
        block
        for message in request["messages"]
        if message["role"] == "tool"
        for block in message["content"]
    ]
    if not results:
        return [
            provider_tool_call("c1", "delegate", {"child": "explorer", "task": "Find the parser"}),
            provider_tool_call("c2", "delegate", {"child": "reviewer", "task": "Review PR 7"}),
            provider_done("tool_use"),
        ]
    answers = "; ".join(f"{r['result']['child']}: {r['result']['answer']}" for r in results)
    return [provider_text_delta(f"Done. {answers}"), provider_done()]


def reviewer_model(request: Any) -> list[Any]:
    last = request["messages"][-1]
    if last["role"] == "user":
        return [provider_tool_call("p1", "post_comment", {"text": "LGTM"}), provider_done()]
    return [provider_text_delta(f"posted {last['content'][0]['result']}"), provider_done()]


def explorer(ctx: ChildContext) -> Agent:
    provider = create_mock_provider(
        [provider_text_delta("parser is in src/parse.py"), provider_done()]
    )
    return create_agent(model=MODEL, provider=provider)


def reviewer(ctx: ChildContext) -> Agent:
    post = requires_approval(define_tool("post_comment", lambda args, _ctx: "comment-1"))
    return create_agent(model=MODEL, provider=create_mock_provider(reviewer_model), tools=[post])


def make_lead(store: Any, outcomes: list[DelegationOutcome]) -> Agent:
    supervisor = create_supervisor(
        children={
            "explorer": ChildSpec(explorer, "finds code"),
            "reviewer": ChildSpec(reviewer, "reviews pull requests"),
        },
        max_concurrency=2,
        budget=Budget(max_tool_rounds=4, max_tokens=50_000, max_delegations=5),
        hooks={"after": outcomes.append},
    )
    return create_agent(
        model=MODEL,
        provider=create_mock_provider(lead_model),
        tools=[supervisor.tool],
        store=store,
        durable=True,  # pausing for approval needs durable runs
        tool_concurrency=2,  # both delegations run in parallel
    )


def show(event: Any) -> None:
    if event["type"].startswith("subagent_"):
        detail = event.get("outcome", "resumed" if event.get("resumed") else "new")
        print(f"event: {event['type']} {event['child']} {detail}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = create_sqlite_session_store(Path(tmp) / "sessions.db")
        outcomes: list[DelegationOutcome] = []
        session = make_lead(store, outcomes).create_session("lead")
        session.subscribe(show)
        paused = await session.run("Find the parser and review PR 7")
        (approval,) = paused.pending_approvals
        inner = approval["action"]["approvals"][0]
        print(f"paused on: {approval['action']['child']} -> {inner['tool']} {inner['arguments']}")

        # Later, from a fresh agent on the same store (as a new process would).
        session = make_lead(store, outcomes).create_session("lead")
        session.subscribe(show)
        done = await session.resume(decisions={approval["id"]: "approve"})
        assert done is not None
        print(f"answer: {done.text}")
        print(f"outcomes: {sorted((o.child, o.outcome) for o in outcomes)}")
        link = (await store.list(outcomes[0].delegation_id))[0]
        print(f"child linked to: {json.dumps(link['data']['parentSessionId'])}")


anyio.run(main)
