"""The approval wait as an OpenTelemetry span (issue 26): opened at
``approval_requested``, ended at ``approval_decided`` with the outcome,
parented to the run that asked; a decision made in another process (a
fresh instrumentation) gets its own span. No argument, reason or secret
reaches an exporter. Real durable runs on a JSONL store, read back through
the SDK's in-memory exporter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry.trace import StatusCode
from tests.telemetry.test_telemetry import Telemetry

from prism.approvals import ApprovalDecision
from prism.stores.jsonl import JsonlSessionStore
from prism.telemetry import instrument

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "approvals"))
from approval_scenario import SECRET, SESSION, make_agent

pytestmark = pytest.mark.anyio
REASON = f"not with key {SECRET}, order A-17 looks odd"


async def test_the_wait_is_a_span_from_request_to_decision(tmp_path: Path) -> None:
    otel = Telemetry()
    store = JsonlSessionStore(str(tmp_path / "s.jsonl"))
    agent = make_agent(store, tmp_path / "counts", secrets=[SECRET])
    handle = instrument(
        agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    session = agent.create_session(SESSION)
    paused = await session.run(f"refund order A-17 with {SECRET}")
    (approval,) = paused.pending_approvals
    assert otel.by_name("prism.approval.wait") == [] and handle.waiting == 1

    await session.resume(decisions={approval["id"]: ApprovalDecision.deny(REASON)})
    (wait,) = otel.by_name("prism.approval.wait")
    assert wait.attributes is not None
    assert dict(wait.attributes) == {
        "gen_ai.operation.name": "await_approval",
        "gen_ai.tool.call.id": "call_refund",
        "gen_ai.tool.name": "refund",
        "prism.approval.id": approval["id"],
        "prism.approval.action.kind": "tool",
        "prism.run.id": paused.run_id,
        "prism.approval.decision": "deny",
    }
    assert wait.status.status_code is StatusCode.OK
    first_run, _resumed = sorted(otel.by_name("invoke_agent"), key=lambda s: s.start_time or 0)
    assert wait.parent is not None and wait.parent.span_id == first_run.context.span_id
    assert handle.waiting == 0
    exported = otel.everything_exported()
    assert SECRET not in exported and "A-17" not in exported and "looks odd" not in exported


async def test_a_decision_in_another_process_gets_its_own_span(tmp_path: Path) -> None:
    path, counts = tmp_path / "s.jsonl", tmp_path / "counts"
    paused = await make_agent(JsonlSessionStore(str(path)), counts).create_session(SESSION).run("x")
    (approval,) = paused.pending_approvals
    otel = Telemetry()  # the "other process": a fresh agent, a fresh instrumentation
    agent = make_agent(JsonlSessionStore(str(path)), counts)
    instrument(agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    await agent.create_session(SESSION).resume(decisions={approval["id"]: "approve"})
    (wait,) = otel.by_name("prism.approval.wait")
    assert wait.attributes is not None
    assert wait.attributes["prism.approval.requested_elsewhere"] is True
    assert wait.attributes["prism.approval.decision"] == "approve"
    assert wait.attributes["prism.approval.id"] == approval["id"]
