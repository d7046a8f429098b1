"""Spans and metrics from a real session, read back through the SDK's
in-memory exporters."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from prism.compaction import CompactionOptions
from prism.errors import ConfigError, RunAbortedError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call,
    provider_usage,
)
from prism.retry import RetryOptions
from prism.runtime import create_agent
from prism.stores import MemorySessionStore
from prism.telemetry import instrument, instrument_store
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

MODEL = {"provider": "mock", "model": "demo"}
CANARY = "sk-canary-0123456789abcdef"


class Telemetry:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def by_name(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name.startswith(prefix)]

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out

    def everything_exported(self) -> str:
        """Every span and metric as text, for leak checks."""
        spans = [span.to_json() for span in self.finished()]
        data = self.reader.get_metrics_data()
        metrics = data.to_json() if data is not None else ""
        return "\n".join([*spans, metrics])


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


def tool_turn(call_id: str, name: str, args: dict[str, Any]) -> list[Any]:
    return [
        provider_tool_call(call_id, name, args),
        provider_usage(input_tokens=10, output_tokens=4, cache_read_tokens=6),
        provider_done("tool_use"),
    ]


def final(text: str = "done") -> list[Any]:
    return [
        provider_text_delta(text),
        provider_usage(input_tokens=20, output_tokens=2),
        provider_done("stop"),
    ]


def add_tool() -> Any:
    return define_tool("add", lambda args, ctx: args["a"] + args["b"])


async def no_sleep(_seconds: float) -> None:
    return None


async def test_span_tree_of_a_tool_run_with_retry_and_compaction(otel: Telemetry) -> None:
    provider = create_mock_provider(
        [
            final("first"),
            [provider_error("upstream overloaded", "503")],
            tool_turn("call_1", "add", {"a": 2, "b": 3}),
            final("2 + 3 = 5"),
        ]
    )
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[add_tool()],
        retry=RetryOptions(base_delay_ms=10),
        sleep=no_sleep,
        compaction=CompactionOptions(threshold_entries=2, keep_recent_entries=1),
    )
    instrument(agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    session = agent.create_session("s1")
    await session.run("warm up", compaction=False)
    otel.spans.clear()
    result = await session.run("What is 2 + 3?")
    assert result.text == "2 + 3 = 5"

    (run,) = otel.by_name("invoke_agent")
    turns = otel.by_name("chat demo")
    (tool,) = otel.by_name("execute_tool add")
    (compaction,) = otel.by_name("prism.compaction")
    assert len(turns) == 2
    # Parent/child: everything hangs off the run span, in one trace.
    for child in (*turns, tool, compaction):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.conversation.id"] == "s1"
    assert run.attributes["gen_ai.request.model"] == "demo"
    assert run.attributes["prism.run.tool_rounds"] == 1
    assert run.status.status_code is StatusCode.OK

    first, second = sorted(turns, key=lambda s: s.start_time or 0)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "mock"
    assert first.attributes["gen_ai.usage.input_tokens"] == 10
    assert first.attributes["gen_ai.usage.output_tokens"] == 4
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 6
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert first.attributes["prism.turn.tool_calls"] == 1
    assert [e.name for e in first.events] == ["prism.retry"]
    assert first.events[0].attributes["prism.retry.attempt"] == 1
    assert second.attributes["gen_ai.usage.input_tokens"] == 20
    assert not second.events
    # The compaction ran before the first turn; the turn started after it.
    assert (compaction.end_time or 0) <= (first.start_time or 0)
    assert (first.end_time or 0) <= (tool.start_time or 0) <= (second.start_time or 0)

    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert compaction.attributes["prism.compaction.trigger"] == "auto"
    # Content is off by default.
    for span in otel.finished():
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.output.messages" not in span.attributes

    metrics = otel.metrics()
    tokens = {
        (p.attributes["gen_ai.token.type"]): p.sum for p in metrics["gen_ai.client.token.usage"]
    }
    assert tokens == {"input": 20 + 10 + 20, "output": 2 + 4 + 2}
    assert sum(p.value for p in metrics["prism.client.cached_tokens"]) == 6
    assert sum(p.count for p in metrics["gen_ai.client.operation.duration"]) == 3
    assert sum(p.count for p in metrics["prism.tool.duration"]) == 1
    assert sum(p.value for p in metrics["prism.provider.retries"]) == 1
    assert sum(p.value for p in metrics["prism.compactions"]) == 1


async def test_aborted_run_span_status(otel: Telemetry) -> None:
    started = anyio.Event()

    async def hang(args: dict[str, Any], ctx: Any) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider([tool_turn("c1", "hang", {}), final()]),
        tools=[define_tool("hang", hang)],
    )
    session = agent.create_session()
    instrument(session, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)

    async def run() -> None:
        with pytest.raises(RunAbortedError):
            await session.run("go")

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await started.wait()
        assert session.abort("user pressed stop") is True

    (run_span,) = otel.by_name("invoke_agent")
    (tool,) = otel.by_name("execute_tool hang")
    assert run_span.status.status_code is StatusCode.ERROR
    assert run_span.attributes["error.type"] == "aborted"
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.parent is not None and tool.parent.span_id == run_span.context.span_id
    # Nothing is left open: the next run traces cleanly.
    assert (await session.run("again")).text == "done"
    assert len(otel.by_name("invoke_agent")) == 2


async def test_tool_error_marks_the_tool_span(otel: Telemetry) -> None:
    def boom(args: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError("tool failed")

    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider([tool_turn("c1", "boom", {}), final()]),
        tools=[define_tool("boom", boom)],
    )
    instrument(agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    await agent.create_session().run("go")
    (tool,) = otel.by_name("execute_tool boom")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == "tool_error"
    (point,) = otel.metrics()["prism.tool.duration"]
    assert point.attributes["error.type"] == "tool_error"


@pytest.mark.parametrize("capture_content", [False, True])
async def test_no_canary_secret_reaches_an_exporter(otel: Telemetry, capture_content: bool) -> None:
    leaky = f"token={CANARY}"
    provider = create_mock_provider(
        [
            tool_turn("c1", "echo", {"text": leaky}),
            [provider_error(f"upstream said {CANARY}", "503")],
            final(f"the key is {CANARY}"),
        ]
    )
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[define_tool("echo", lambda args, ctx: {"echoed": args["text"], "again": CANARY})],
        secrets=[CANARY],
        retry=RetryOptions(base_delay_ms=10),
        sleep=no_sleep,
    )
    instrument(
        agent,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=capture_content,
    )
    session = agent.create_session()
    result = await session.run(f"please use {CANARY}")
    assert result.text == "the key is [REDACTED]"
    exported = otel.everything_exported()
    assert CANARY not in exported
    assert json.dumps(CANARY)[1:-1] not in exported
    (tool,) = otel.by_name("execute_tool echo")
    if capture_content:
        assert "[REDACTED]" in str(tool.attributes["gen_ai.tool.call.arguments"])
        assert "[REDACTED]" in str(tool.attributes["gen_ai.tool.call.result"])
        turns = otel.by_name("chat demo")
        assert any("gen_ai.output.messages" in s.attributes for s in turns)
    else:
        assert "gen_ai.tool.call.arguments" not in tool.attributes


async def test_gate_decision_is_an_event_on_the_turn_span(otel: Telemetry) -> None:
    from prism.attention import AttentionCompilerOptions

    big = "x" * 4_000
    script: list[Any] = []
    for index in range(6):
        script.append(tool_turn(f"c{index}", "blob", {}))
    script.append(final())
    agent = create_agent(
        model={"provider": "mock", "model": "demo", "limits": {"contextWindow": 12_000}},
        provider=create_mock_provider(script),
        tools=[define_tool("blob", lambda args, ctx: big)],
        attention_compiler=AttentionCompilerOptions(trigger_ratio=0.5),
        max_tool_rounds=10,
    )
    instrument(agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    await agent.create_session().run("go")
    gate_events = [
        event
        for span in otel.by_name("chat demo")
        for event in span.events
        if event.name == "prism.attention.gate"
    ]
    assert gate_events, "the gate tripped on this fixture"
    first = gate_events[0].attributes
    assert first["prism.attention.used"] > first["prism.attention.used_after"]
    assert first["prism.attention.stubbed_rows"] >= 1
    assert first["prism.attention.cache_bust"] is True
    assert set(first) == {
        "prism.attention.used",
        "prism.attention.used_after",
        "prism.attention.input_cap",
        "prism.attention.dropped_thinking_turns",
        "prism.attention.stubbed_rows",
        "prism.attention.stubbed_bytes",
        "prism.attention.truncated",
        "prism.attention.cache_bust",
    }
    metrics = otel.metrics()
    trips = sum(p.value for p in metrics["prism.attention.trips"])
    busts = sum(p.value for p in metrics["prism.attention.cache_busts"])
    assert trips == len(gate_events) and 1 <= busts <= trips


async def test_store_append_latency_and_passthrough(otel: Telemetry) -> None:
    inner = MemorySessionStore()
    store = instrument_store(inner, meter_provider=otel.meter_provider)
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()), store=store)
    session = agent.create_session("s")
    await session.run("hi")
    assert [e["id"] for e in await inner.list("s")] == [e["id"] for e in await store.list("s")]
    points = otel.metrics()["prism.store.append.duration"]
    assert sum(p.count for p in points) >= 1
    assert {p.attributes["prism.store"] for p in points} == {"MemorySessionStore"}


async def test_uninstrument_stops_recording(otel: Telemetry) -> None:
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()))
    handle = instrument(
        agent, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    session = agent.create_session()
    await session.run("one")
    handle.uninstrument()
    await session.run("two")
    assert len(otel.by_name("invoke_agent")) == 1


async def test_bad_targets_are_refused() -> None:
    with pytest.raises(ConfigError, match="Agent or an AgentSession"):
        instrument(object())
    agent = create_agent(model=MODEL, provider=create_mock_provider(final()))
    with pytest.raises(ConfigError, match="capture_content"):
        instrument(agent, capture_content="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="SessionStore"):
        instrument_store(object())  # type: ignore[arg-type]


def test_import_prism_does_not_import_opentelemetry() -> None:
    import subprocess
    import sys

    code = "import sys, prism, prism.runtime; print('opentelemetry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
