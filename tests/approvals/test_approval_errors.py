"""Deferred approval in one process, on a real JSONL store: every bad input
is a clear error that runs nothing and stores nothing, the events, the
execution-policy path (``defer=True``), non-durable runs, redaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_type_hints

import anyio
import pytest
from approval_scenario import MODEL, SECRET, SESSION, executions, make_agent, script

from prism.approvals import (
    ApprovalDecision,
    ApprovalDecisionError,
    pending_approvals,
    requires_approval,
)
from prism.contracts import ApprovalDecidedEvent, ApprovalRequestedEvent, PendingApproval
from prism.errors import SessionBusyError
from prism.providers import create_mock_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.security.execution import (
    ExecutionAction,
    ExecutionDecision,
    authorize,
    create_execution_policy,
)
from prism.stores.jsonl import JsonlSessionStore
from prism.tools import define_tool

pytestmark = pytest.mark.anyio


async def paused(tmp_path: Path, **options: Any) -> tuple[Any, Path, Path, str]:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    session = make_agent(JsonlSessionStore(str(path)), counts, **options).create_session(SESSION)
    result = await session.run("refund order A-17")
    assert result.paused
    return session, path, counts, result.pending_approvals[0]["id"]


async def test_unknown_id_other_session_and_bad_decisions_change_nothing(tmp_path: Path) -> None:
    session, path, counts, approval = await paused(tmp_path)
    other = make_agent(JsonlSessionStore(str(path)), counts).create_session("ticket-99")
    await other.run("refund order B-2")
    (foreign,) = await pending_approvals(other)
    before = path.read_bytes()
    with pytest.raises(ApprovalDecisionError, match="not an approval of this session"):
        await session.resume(decisions={"approval_nope": "approve"})
    with pytest.raises(ApprovalDecisionError, match="another session's"):
        await session.resume(decisions={foreign["id"]: "approve"})
    with pytest.raises(ApprovalDecisionError, match="must be an ApprovalDecision"):
        await session.resume(decisions={approval: 42})
    with pytest.raises(ApprovalDecisionError, match="mapping"):
        await session.resume(decisions=[approval])  # type: ignore[arg-type]
    assert path.read_bytes() == before
    assert executions(counts, "refund") == []
    assert [a["id"] for a in await pending_approvals(session)] == [approval]


async def test_a_decided_or_closed_approval_is_refused(tmp_path: Path) -> None:
    session, path, counts, approval = await paused(tmp_path)
    # A new run on the paused session closes the paused run (run_ended).
    await session.run("never mind")
    assert await pending_approvals(session) == []
    before = path.read_bytes()
    with pytest.raises(ApprovalDecisionError, match="already decided"):
        await session.resume(decisions={approval: "approve"})
    assert path.read_bytes() == before
    assert executions(counts, "refund") == []


async def test_resuming_twice_at_once_the_second_is_busy(tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    entered, release = anyio.Event(), anyio.Event()

    async def refund(args: dict[str, Any], ctx: Any) -> str:
        (counts.open("a")).write("refund once\n")
        entered.set()
        await release.wait()
        return "refunded"

    def agent() -> Any:
        tool = requires_approval(define_tool("refund", refund))
        lookup = define_tool("lookup", lambda a, c: "paid", idempotent=True)
        return create_agent(
            model=MODEL,
            provider=create_mock_provider(script),
            tools=[tool, lookup],
            store=JsonlSessionStore(str(path)),
            durable=True,
        )

    first = agent().create_session(SESSION)
    (approval,) = (await first.run("refund")).pending_approvals
    decisions = {approval["id"]: ApprovalDecision.approve()}
    second = agent().create_session(SESSION)
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as group:

        async def resume_first() -> None:
            outcome["first"] = await first.resume(decisions=decisions)

        group.start_soon(resume_first)
        await entered.wait()
        with pytest.raises(SessionBusyError):
            await second.resume(decisions=decisions)
        release.set()
    assert not outcome["first"].paused
    assert counts.read_text() == "refund once\n"
    with pytest.raises(ApprovalDecisionError, match="already decided"):
        await second.resume(decisions=decisions)
    assert counts.read_text() == "refund once\n"


async def test_an_approval_of_a_compacted_run_is_refused(tmp_path: Path) -> None:
    session, path, counts, approval = await paused(tmp_path)
    await session.compact(keep_recent_entries=0)
    before = path.read_bytes()
    with pytest.raises(ApprovalDecisionError, match="compacted"):
        await session.resume(decisions={approval: "approve"})
    assert path.read_bytes() == before
    assert executions(counts, "refund") == []


async def test_events_are_typed_and_the_decided_result_is_stamped(tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    events: list[Any] = []
    agent = make_agent(JsonlSessionStore(str(path)), counts)
    session = agent.create_session(SESSION)
    session.subscribe(events.append)
    approval = (await session.run("refund")).pending_approvals[0]["id"]
    await session.resume(decisions={approval: ApprovalDecision.approve("fine")})
    requested = [e for e in events if e["type"] == "approval_requested"]
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert len(requested) == 1 and len(decided) == 1
    assert requested[0]["approval"]["id"] == approval
    assert set(requested[0]) <= set(get_type_hints(ApprovalRequestedEvent))
    assert set(requested[0]["approval"]) <= set(get_type_hints(PendingApproval))
    assert set(decided[0]) <= set(get_type_hints(ApprovalDecidedEvent))
    assert decided[0] == {
        **decided[0],
        "approvalId": approval,
        "toolCallId": "call_refund",
        "decision": "approve",
        "reason": "fine",
    }
    results = [
        block
        for m in await session.messages()
        if m["role"] == "tool"
        for block in m["content"]
        if block.get("toolCallId") == "call_refund"
    ]
    assert results[0]["metadata"] == {"approval": {"id": approval, "decision": "approve"}}


async def test_pending_approvals_are_redacted_like_the_store(tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"

    def leaky(request: Any) -> Any:
        events = script(request)
        for event in events:
            if event.get("type") == "tool_call" and event.get("name") == "refund":
                event["arguments"] = {"order": SECRET, "cents": 1}
        return events

    agent = make_agent(
        JsonlSessionStore(str(path)),
        counts,
        provider=create_mock_provider(leaky),
        secrets=[SECRET],
    )
    result = await agent.create_session(SESSION).run("refund")
    assert result.paused
    assert SECRET not in json.dumps(result.pending_approvals)
    assert SECRET not in path.read_text()


async def test_a_run_that_cannot_pause_refuses_the_call(tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    session = make_agent(None, counts, durable=False).create_session(SESSION)
    result = await session.run("refund")
    assert not result.paused
    outcome = json.loads(result.text.removeprefix("refund outcome: "))
    assert outcome["error"] is True
    assert outcome["result"]["code"] == "approval_required"
    assert executions(counts, "refund") == []


def writer_agent(store: Any, policy: Any) -> Any:
    async def write_note(args: dict[str, Any], ctx: Any) -> str:
        action = await authorize(
            policy,
            ExecutionAction("write", paths=(args["path"],), tool_call_id=ctx.tool_call_id),
            redactor=NOOP_REDACTOR,
        )
        Path(action.paths[0]).write_text("note")
        return f"wrote {action.paths[0]}"

    def note_script(request: Any) -> Any:
        from prism.providers import provider_done, provider_text_delta, provider_tool_call

        if not any(m["role"] == "assistant" for m in request["messages"]):
            return [
                provider_tool_call("call_w", "write_note", {"path": "notes/a.txt"}),
                provider_done(),
            ]
        last = request["messages"][-1]["content"][-1]
        return [provider_text_delta(json.dumps(last.get("result"))), provider_done()]

    return create_agent(
        model=MODEL,
        provider=create_mock_provider(note_script),
        tools=[define_tool("write_note", write_note)],
        store=store,
        durable=True,
    )


async def test_an_execution_policy_that_defers_pauses_and_edits_are_rechecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    monkeypatch.chdir(root)
    policy = create_execution_policy([root], defer=True, redactor=NOOP_REDACTOR)
    store = JsonlSessionStore(str(tmp_path / "s.jsonl"))
    session = writer_agent(store, policy).create_session("notes")
    result = await session.run("write a note")
    (request,) = result.pending_approvals
    assert request["action"]["kind"] == "write"
    assert request["action"]["paths"] == ["notes/a.txt"]
    assert "needs approval" in request["reason"]
    assert not (root / "notes" / "a.txt").exists()
    # An edit that widens access (outside the roots) is refused by the policy.
    outside = ExecutionAction("write", paths=(str(tmp_path / "escape.txt"),))
    done = await session.resume(
        decisions={request["id"]: ExecutionDecision.allow_with_changes(outside)}
    )
    assert done is not None and "edited action refused" in done.text
    assert not (tmp_path / "escape.txt").exists()
    assert not (root / "notes" / "a.txt").exists()

    session2 = writer_agent(store, policy).create_session("notes-2")
    (request,) = (await session2.run("write a note")).pending_approvals
    done = await session2.resume(decisions={request["id"]: True})
    assert done is not None and "wrote" in done.text
    assert (root / "notes" / "a.txt").read_text() == "note"


async def test_a_policy_that_raises_fails_closed_with_a_redacted_error(tmp_path: Path) -> None:
    class Broken:
        roots = (str(tmp_path),)
        defers = True

        def decide(self, action: ExecutionAction) -> ExecutionDecision:
            raise RuntimeError(f"boom {SECRET}")

    session = writer_agent(None, Broken()).create_session("broken")
    result = await session.run("write a note")
    assert not result.paused
    assert "execution policy failed: RuntimeError" in result.text
    assert SECRET not in result.text
    assert not (tmp_path / "notes").exists()


async def test_unanswered_approvals_stay_pending_while_others_are_decided(tmp_path: Path) -> None:
    from prism.providers import provider_done, provider_text_delta, provider_tool_call

    def two_refunds(request: Any) -> Any:
        if not any(m["role"] == "assistant" for m in request["messages"]):
            return [
                provider_tool_call("call_a", "refund", {"order": "A", "cents": 1}),
                provider_tool_call("call_b", "refund", {"order": "B", "cents": 2}),
                provider_done(),
            ]
        return [provider_text_delta("done"), provider_done()]

    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"

    def session() -> Any:
        store = JsonlSessionStore(str(path))
        agent = make_agent(store, counts, provider=create_mock_provider(two_refunds))
        return agent.create_session(SESSION)

    first = await session().run("two refunds")
    ids = {a["toolCallId"]: a["id"] for a in first.pending_approvals}
    assert sorted(ids) == ["call_a", "call_b"]
    # A new handle (as after a restart) decides one: the other stays pending.
    partial = await session().resume(decisions={ids["call_a"]: "approve"})
    assert partial is not None and partial.paused
    assert [a["id"] for a in partial.pending_approvals] == [ids["call_b"]]
    assert executions(counts, "refund") == ["refund call_a 1"]
    assert [a["id"] for a in await pending_approvals(session())] == [ids["call_b"]]
    done = await session().resume(decisions={ids["call_b"]: False})
    assert done is not None and not done.paused and done.text == "done"
    assert executions(counts, "refund") == ["refund call_a 1"]
