"""Telemetry state per run (issue 34 item 15): overlapping runs of one session
end their own spans, spans name the run's model, state is freed when runs
end, and with content capture off neither an error text nor a tool name the
model invented reaches an exporter. Read back through the SDK's in-memory
exporters."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from tests.telemetry.test_telemetry import MODEL, Telemetry, add_tool, final, tool_turn

from prism.errors import ProviderError
from prism.providers import create_mock_provider, provider_error
from prism.runtime import create_agent
from prism.telemetry import instrument
from prism.telemetry._instrument import MAX_TRACKED_SESSIONS

pytestmark = pytest.mark.anyio


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


async def _recorded_run(script: list[Any], prompt: str) -> list[dict[str, Any]]:
    """The events of one real run on session "s"."""
    agent = create_agent(model=MODEL, provider=create_mock_provider(script), tools=[add_tool()])
    session = agent.create_session("s")
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    await session.run(prompt)
    return events


async def test_overlapping_runs_of_one_session_end_their_own_spans(otel: Telemetry) -> None:
    # Two runs of session "s" whose events interleave, as when a dropped
    # stream's run is still closing while the next run starts: the second
    # run_started used to replace the first run's state, so the first run's
    # tool span hung off nothing and its run span never ended.
    tool_run = await _recorded_run([tool_turn("c1", "add", {"a": 1, "b": 2}), final("3")], "add")
    text_run = await _recorded_run([final("hello")], "hi")
    tool_id, text_id = tool_run[0]["runId"], text_run[0]["runId"]
    assert tool_id != text_id and tool_run[0]["sessionId"] == text_run[0]["sessionId"] == "s"
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()), tools=[add_tool()])
    handle = instrument(
        agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    # The tool run starts and asks for its tool; the text run runs whole;
    # then the tool run finishes.
    split = next(i for i, e in enumerate(tool_run) if e["type"] == "tool_call")
    for event in [*tool_run[: split + 1], *text_run, *tool_run[split + 1 :]]:
        handle(event)

    runs = {s.attributes["prism.run.id"]: s for s in otel.by_name("invoke_agent")}
    assert set(runs) == {tool_id, text_id}
    assert runs[tool_id].attributes["prism.run.tool_rounds"] == 1
    assert runs[text_id].attributes["prism.run.tool_rounds"] == 0
    assert all(span.status.status_code is StatusCode.OK for span in runs.values())
    (tool,) = otel.by_name("execute_tool add")
    assert tool.parent is not None and tool.parent.span_id == runs[tool_id].context.span_id
    for turn in otel.by_name("chat demo"):
        assert turn.parent is not None
        assert turn.parent.span_id in {s.context.span_id for s in runs.values()}
    by_run = {
        run_id: [t for t in otel.by_name("chat") if t.parent.span_id == span.context.span_id]  # type: ignore[union-attr]
        for run_id, span in runs.items()
    }
    assert (len(by_run[tool_id]), len(by_run[text_id])) == (2, 1)
    assert handle.tracked[0] == 0  # both runs ended: nothing kept for them


async def test_spans_report_the_runs_model_override(otel: Telemetry) -> None:
    agent = create_agent(model=MODEL, provider=create_mock_provider([final(), final()]))
    instrument(agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    session = agent.create_session("s")
    await session.run("hi", model={"provider": "mock", "model": "override"})
    (run,) = otel.by_name("invoke_agent")
    (turn,) = otel.by_name("chat")
    assert run.attributes["gen_ai.request.model"] == "override"
    assert turn.name == "chat override"
    assert turn.attributes["gen_ai.request.model"] == "override"
    durations = otel.metrics()["gen_ai.client.operation.duration"]
    assert {p.attributes["gen_ai.request.model"] for p in durations} == {"override"}
    # The next run without an override is back on the agent's model.
    otel.spans.clear()
    await session.run("again")
    (run,) = otel.by_name("invoke_agent")
    assert run.attributes["gen_ai.request.model"] == "demo"


async def test_a_session_model_set_before_instrumenting_is_reported(otel: Telemetry) -> None:
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()))
    session = agent.create_session("s")
    await session.set_model({"provider": "mock", "model": "chosen-earlier"})
    instrument(session, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    await session.run("hi")
    (run,) = otel.by_name("invoke_agent")
    assert run.attributes["gen_ai.request.model"] == "chosen-earlier"


async def test_state_is_freed_when_runs_end_and_bounded_per_session(otel: Telemetry) -> None:
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()))
    handle = instrument(
        agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    for index in range(40):
        await agent.create_session(f"s{index}").run("hi")
    assert handle.tracked == (0, 0)  # no gate trips, no open runs: nothing kept
    assert len(otel.by_name("invoke_agent")) == 40
    # What does outlive runs (the frontier counts behind the cache-bust
    # signal) stays bounded however many sessions pass through.
    for index in range(MAX_TRACKED_SESSIONS + 50):
        handle(
            {
                "type": "attention_compiled",
                "used": 10,
                "usedAfter": 5,
                "inputCap": 100,
                "triggerRatio": 0.75,
                "droppedThinkingTurns": 0,
                "stubbedToolResults": 1,
                "stubbedBytes": 10,
                "truncated": False,
                "sessionId": f"gate{index}",
            }
        )
    assert handle.tracked == (0, MAX_TRACKED_SESSIONS)


@pytest.mark.parametrize("capture_content", [False, True])
async def test_error_text_and_invented_tool_names_stay_out_without_capture(
    otel: Telemetry, capture_content: bool
) -> None:
    prompt = "my private question about the merger"
    invented = "exfiltrate_the_merger_plan"
    provider = create_mock_provider(
        [
            tool_turn("c1", invented, {}),
            # A provider that quotes the request back in its error message.
            [provider_error(f"bad request: messages[0] = {prompt!r}", "400", retryable=False)],
        ]
    )
    agent = create_agent(model=MODEL, provider=provider, tools=[add_tool()])
    instrument(
        agent,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=capture_content,
    )
    with pytest.raises(ProviderError):
        await agent.create_session().run(prompt)
    (run,) = otel.by_name("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "400"
    (tool,) = otel.by_name("execute_tool")
    assert tool.attributes["prism.tool.unregistered"] is True
    (point,) = otel.metrics()["prism.tool.duration"]
    assert point.attributes["gen_ai.tool.name"] == "(unregistered)"
    exported = otel.everything_exported()
    if capture_content:
        assert prompt in (run.status.description or "")
        assert tool.name == f"execute_tool {invented}"
    else:
        assert run.status.description is None
        assert tool.name == "execute_tool"
        assert "gen_ai.tool.name" not in tool.attributes
        assert prompt not in exported and "merger" not in exported
        assert invented not in exported
