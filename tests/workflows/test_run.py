"""run_workflow / resume_workflow in one process on a real JSONL store:
typed values, routes, bounded loops, failures, definition changes,
human decisions and the background handle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from prism.approvals import ApprovalDecision, ApprovalDecisionError
from prism.stores import create_jsonl_session_store
from prism.workflows import (
    END,
    LoopLimitError,
    Route,
    StepContext,
    StepInterruptedError,
    StepTypeError,
    Workflow,
    WorkflowChangedError,
    WorkflowError,
    WorkflowStepError,
    loop,
    resume_workflow,
    run_workflow,
    start_workflow_background,
    workflow_status,
)

pytestmark = pytest.mark.anyio


class Draft(BaseModel):
    text: str
    tries: int = 0


def refine_flow(passes_at: int, *, then: Any = None) -> Workflow:
    flow = Workflow("refine")

    @flow.step(next="review", idempotent=True)
    def write(draft: Draft) -> Draft:
        return Draft(text=draft.text + "!", tries=draft.tries + 1)

    @flow.gate(routes={"again": loop(write, max=2, then=then), "ok": END})
    def review(draft: Draft) -> str:
        return "ok" if draft.tries >= passes_at else "again"

    return flow


async def test_a_refine_loop_runs_until_its_gate_passes(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    result = await run_workflow(refine_flow(3), Draft(text="hi"), store=store, workflow_id="w")
    assert result.status == "completed"
    assert result.output == Draft(text="hi!!!", tries=3)
    status = await workflow_status(store, "w")
    assert (status.state, status.steps_done) == ("completed", 6)
    # A completed workflow resumes to its stored result, running nothing.
    again = await resume_workflow(refine_flow(3), store=store, workflow_id="w")
    assert again.output == Draft(text="hi!!!", tries=3)
    assert len(await store.list("w")) == 8  # start, 6 done, end


async def test_a_loop_over_its_maximum_fails_or_goes_to_then(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    with pytest.raises(LoopLimitError, match=r"reached its maximum of 2"):
        await run_workflow(refine_flow(99), Draft(text="x"), store=store, workflow_id="w1")
    status = await workflow_status(store, "w1")
    assert status.state == "failed" and status.error is not None
    assert status.error["code"] == "loop_limit"
    with pytest.raises(WorkflowStepError, match="failed at step 'review'"):
        await resume_workflow(refine_flow(99), store=store, workflow_id="w1")
    out = await run_workflow(
        refine_flow(99, then=END), Draft(text="x"), store=store, workflow_id="w2"
    )
    assert out.output == Draft(text="x!!!", tries=3)


async def test_a_step_returning_the_wrong_type_fails_naming_it(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    flow = Workflow("typed")

    @flow.step(next=END)
    def shout(text: str) -> Draft:
        return {"text": text.upper()}  # type: ignore[return-value]

    with pytest.raises(
        StepTypeError, match=r"step 'shout' returned a dict where Draft is declared"
    ):
        await run_workflow(flow, "hi", store=store, workflow_id="w")
    assert (await workflow_status(store, "w")).state == "failed"
    with pytest.raises(StepTypeError, match=r"the input is not a str"):
        await run_workflow(flow, 5, store=store, workflow_id="w2")
    assert await store.list("w2") == []


async def test_a_gate_routes_a_new_value_checked_against_its_target(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    flow = Workflow("routes")

    @flow.gate(routes={"long": "count", "short": END})
    def size(text: str) -> Route | str:
        return Route("long", text) if len(text) > 3 else "short"

    @flow.step(next=END)
    def count(n: int) -> int:
        return n

    with pytest.raises(StepTypeError, match=r"step 'size' routed to 'count' a str where int"):
        await run_workflow(flow, "hello", store=store, workflow_id="w")
    assert (await run_workflow(flow, "hi", store=store, workflow_id="w2")).output == "hi"


async def test_a_step_that_raises_fails_the_workflow_without_its_text(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    flow = Workflow("boom")

    @flow.step(next=END)
    def explode(text: str) -> str:
        raise RuntimeError("token sk-secret-123 leaked")

    with pytest.raises(WorkflowStepError, match="step 'explode'") as caught:
        await run_workflow(flow, "x", store=store, workflow_id="w")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert "sk-secret" not in (tmp_path / "s.jsonl").read_text()
    with pytest.raises(WorkflowError, match="already exists"):
        await run_workflow(flow, "x", store=store, workflow_id="w")
    with pytest.raises(WorkflowError, match="no workflow 'nope'"):
        await resume_workflow(flow, store=store, workflow_id="nope")


def approval_flow(log: list[str]) -> Workflow:
    flow = Workflow("ship")

    @flow.step(next="approve", idempotent=True)
    def build(version: str) -> str:
        log.append(f"build {version}")
        return f"{version}.tar"

    @flow.decision(
        question=lambda artifact: f"ship {artifact}?", routes={"approve": "ship", "deny": END}
    )
    def approve(artifact: str, decision: ApprovalDecision) -> str:
        return artifact if decision.kind == "approve" else f"not shipped: {decision.reason}"

    @flow.step(next=END)
    def ship(artifact: str) -> str:
        log.append(f"ship {artifact}")
        return f"shipped {artifact}"

    return flow


async def test_a_decision_pauses_and_resumes_with_the_answer(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    log: list[str] = []
    paused = await run_workflow(approval_flow(log), "1.0", store=store, workflow_id="w")
    assert paused.paused and len(paused.pending_approvals) == 1
    request = paused.pending_approvals[0]
    assert request["reason"] == "ship 1.0.tar?" and request["step"] == "approve"
    # Asking again without a decision runs nothing and pauses again.
    again = await resume_workflow(approval_flow(log), store=store, workflow_id="w")
    assert again.pending_approvals == paused.pending_approvals
    status = await workflow_status(store, "w")
    assert status.state == "paused" and status.pending_approvals[0]["id"] == request["id"]
    with pytest.raises(ApprovalDecisionError, match="not an approval"):
        await resume_workflow(
            approval_flow(log), store=store, workflow_id="w", decisions={"x": True}
        )
    with pytest.raises(ApprovalDecisionError, match="must be an ApprovalDecision"):
        await resume_workflow(
            approval_flow(log), store=store, workflow_id="w", decisions={request["id"]: 3}
        )
    done = await resume_workflow(
        approval_flow(log), store=store, workflow_id="w", decisions={request["id"]: True}
    )
    assert done.output == "shipped 1.0.tar"
    assert log == ["build 1.0", "ship 1.0.tar"]
    with pytest.raises(ApprovalDecisionError):
        await resume_workflow(
            approval_flow(log), store=store, workflow_id="w", decisions={request["id"]: True}
        )
    denied = await run_workflow(approval_flow(log), "2.0", store=store, workflow_id="w2")
    out = await resume_workflow(
        approval_flow(log),
        store=store,
        workflow_id="w2",
        decisions={denied.pending_approvals[0]["id"]: ApprovalDecision.deny("not today")},
    )
    assert out.output == "not shipped: not today"


async def test_a_changed_definition_is_refused_naming_the_step(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    await run_workflow(approval_flow([]), "1.0", store=store, workflow_id="w")

    changed = Workflow("ship")

    @changed.step(next="approve", idempotent=True)
    def build(version: str) -> int:  # another output type
        return 1

    @changed.decision(question="?", routes={"approve": END, "deny": END})
    def approve(artifact: int, decision: ApprovalDecision) -> int:
        return artifact

    with pytest.raises(WorkflowChangedError, match="changed at step 'build'"):
        await resume_workflow(changed, store=store, workflow_id="w")

    # Compatible: the bodies changed, a step not reached yet changed.
    log: list[str] = []
    compatible = approval_flow(log)
    compatible.steps["ship"].fn = lambda artifact: f"SHIPPED {artifact}"
    paused = await resume_workflow(compatible, store=store, workflow_id="w")
    out = await resume_workflow(
        compatible,
        store=store,
        workflow_id="w",
        decisions={paused.pending_approvals[0]["id"]: True},
    )
    assert out.output == "SHIPPED 1.0.tar"
    with pytest.raises(WorkflowChangedError, match="stored workflow is 'ship', not 'other'"):
        await resume_workflow(_other(), store=store, workflow_id="w")


def _identity(x: str) -> str:
    return x


def _other() -> Workflow:
    flow = Workflow("other")
    flow.step(next=END)(_identity)
    return flow


async def test_the_background_handle_awaits_queries_and_cancels(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    entered = anyio.Event()
    release = anyio.Event()
    flow = Workflow("slow")

    @flow.step(next="wait", idempotent=True)
    def first(x: int) -> int:
        return x + 1

    @flow.step(next=END)
    async def wait(ctx: StepContext, x: int) -> int:
        assert ctx.step == "wait" and ctx.seq == 1
        entered.set()
        await release.wait()
        return x * 10

    handle = start_workflow_background(flow, 1, store=store, workflow_id="w")
    await entered.wait()
    status = await handle.status()
    assert (status.state, status.step, status.steps_done) == ("running", "wait", 1)
    release.set()
    assert (await handle.result()).output == 20 and handle.done

    release2 = anyio.Event()
    entered2 = anyio.Event()
    flow2 = Workflow("slow")

    @flow2.step(next=END, idempotent=True)
    async def hang(x: int) -> int:
        entered2.set()
        await release2.wait()
        return x

    handle = start_workflow_background(flow2, 1, store=store, workflow_id="w2")
    await entered2.wait()
    handle.cancel()
    with pytest.raises(WorkflowError, match="was cancelled"):
        await handle.result()
    assert (await handle.status()).state == "cancelled"
    release2.set()
    resumed = start_workflow_background(flow2, store=store, workflow_id="w2", resume=True)
    assert (await resumed.result()).output == 1


async def test_a_tool_step_calls_its_tool_with_the_returned_arguments(tmp_path: Path) -> None:
    from prism.tools import define_tool

    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    calls: list[dict[str, Any]] = []

    def lookup(args: dict[str, Any], ctx: Any) -> str:
        calls.append(args)
        if args["sku"] == "gone":
            raise LookupError("no such sku")
        return f"stock of {args['sku']}: 3"

    flow = Workflow("tools")

    @flow.tool(define_tool("lookup", lookup, idempotent=True), next=END)
    def ask(sku: str) -> dict[str, Any]:
        return {"sku": sku}

    assert flow.steps["ask"].idempotent
    result = await run_workflow(flow, "A-1", store=store, workflow_id="w")
    assert calls == [{"sku": "A-1"}]
    assert result.output == {"toolCallId": "w:0", "name": "lookup", "value": "stock of A-1: 3"}
    with pytest.raises(WorkflowError, match="tool 'lookup' of step 'ask' failed") as caught:
        await run_workflow(flow, "gone", store=store, workflow_id="w2")
    assert caught.value.code == "tool_error"
    assert (await workflow_status(store, "w2")).state == "failed"


async def test_a_cut_off_non_idempotent_step_asks_before_it_runs_again(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    entered = anyio.Event()
    runs: list[int] = []

    def charging(block: bool) -> Workflow:
        flow = Workflow("charge")

        @flow.step(next=END)
        async def charge(cents: int) -> int:
            runs.append(cents)
            if block:
                entered.set()
                await anyio.Event().wait()  # cut off here by the cancel below
            return cents

        return flow

    for workflow_id, answer in (("w1", ApprovalDecision.deny("charged by hand")), ("w2", True)):
        runs.clear()
        handle = start_workflow_background(charging(True), 5, store=store, workflow_id=workflow_id)
        await entered.wait()
        entered = anyio.Event()
        handle.cancel()
        with pytest.raises(WorkflowError, match="cancelled"):
            await handle.result()
        paused = await resume_workflow(charging(False), store=store, workflow_id=workflow_id)
        (approval,) = paused.pending_approvals
        assert "started and did not finish" in approval["reason"]
        assert runs.count(5) == 1  # not run again without a decision
        if answer is True:
            done = await resume_workflow(
                charging(False),
                store=store,
                workflow_id=workflow_id,
                decisions={approval["id"]: answer},
            )
            assert done.output == 5 and runs == [5, 5]
        else:
            with pytest.raises(StepInterruptedError, match="charged by hand"):
                await resume_workflow(
                    charging(False),
                    store=store,
                    workflow_id=workflow_id,
                    decisions={approval["id"]: answer},
                )
            assert (await workflow_status(store, workflow_id)).state == "failed"
            assert runs == [5]


async def test_each_outer_round_restarts_the_inner_loops_count(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    flow = Workflow("nested")

    class Job(BaseModel):
        task: int = 0
        tries: int = 0

    @flow.step(next="check", idempotent=True)
    def work(job: Job) -> Job:
        return job.model_copy(update={"tries": job.tries + 1})

    @flow.gate(routes={"retry": loop(work, max=2), "ok": "next_task"})
    def check(job: Job) -> str:
        return "ok" if job.tries == 3 else "retry"  # every task needs both retries

    @flow.gate(routes={"more": loop(work, max=5), "done": END})
    def next_task(job: Job) -> Route:
        if job.task == 2:
            return Route("done", job)
        return Route("more", Job(task=job.task + 1))

    result = await run_workflow(flow, Job(), store=store, workflow_id="w")
    assert result.output == Job(task=2, tries=3)
