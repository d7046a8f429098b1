"""A child's spans nest under the parent's tool span: instrument the parent
agent and subscribe the same instrumentation to the supervisor."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from subagent_scenario import MODEL, child_script, parent_script

from prism.providers import create_mock_provider
from prism.runtime import create_agent
from prism.stores import MemorySessionStore
from prism.subagents import ChildSpec, create_supervisor
from prism.telemetry import instrument

pytestmark = pytest.mark.anyio


async def test_child_run_spans_nest_under_the_parents_tool_span() -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))

    def child(_ctx: Any) -> Any:
        provider = create_mock_provider(child_script(None, "child answer "))
        return create_agent(model=MODEL, provider=provider, metadata={"name": "explorer"})

    supervisor = create_supervisor(children={"explorer": ChildSpec(child)})
    parent = create_agent(
        model=MODEL,
        provider=create_mock_provider(parent_script([("c1", "explorer"), ("c2", "explorer")])),
        tools=[supervisor.tool],
        store=MemorySessionStore(),
        metadata={"name": "lead"},
        tool_concurrency=2,
    )
    instrumentation = instrument(parent, tracer_provider=tracer_provider)
    supervisor.subscribe(instrumentation)
    await parent.create_session("parent").run("go")

    finished = list(spans.get_finished_spans())
    (lead,) = [s for s in finished if s.name == "invoke_agent lead"]
    tools = {
        s.attributes["gen_ai.tool.call.id"]: s
        for s in finished
        if s.name == "execute_tool delegate"
    }
    children = [s for s in finished if s.name == "invoke_agent explorer"]
    assert len(children) == 2
    assert {c.parent.span_id for c in children} == {t.context.span_id for t in tools.values()}
    assert all(t.parent.span_id == lead.context.span_id for t in tools.values())
    assert {c.context.trace_id for c in children} == {lead.context.trace_id}
    assert instrumentation._subagent_parents == {}
