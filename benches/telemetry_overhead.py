"""Per-turn cost of telemetry: the same 1,200-message session run with no
instrumentation, with telemetry on and the SDK's in-memory exporters, and
(to show "off" costs nothing) instrumented then uninstrumented.

Each turn is a tool round (user -> tool call -> 2 KB tool result -> text),
the scenario of benches/runtime_overhead.py. Variants interleave round by
round so drift on a shared machine hits them alike; the figure is the
median per-turn time.

    python -m benches.telemetry_overhead [--warm 300] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any

from benches.runtime_overhead import PAYLOAD, FunctionProvider
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from prism.runtime import AgentSession, create_agent
from prism.stores import create_memory_session_store
from prism.telemetry import instrument
from prism.tools import define_tool


def _session(loop: asyncio.AbstractEventLoop, warm: int, mode: str) -> tuple[AgentSession, Any]:
    agent = create_agent(
        model={"provider": "bench", "model": "function"},
        provider=FunctionProvider(),
        tools=[define_tool("lookup", lambda args, ctx: PAYLOAD)],
        store=create_memory_session_store(),
    )
    exporter = InMemorySpanExporter()
    if mode != "off":
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        handle = instrument(agent, tracer_provider=tracer_provider, meter_provider=meter_provider)
    session = agent.create_session(f"bench-{mode}")
    if mode == "uninstrumented":
        handle.uninstrument()
    for n in range(warm):
        loop.run_until_complete(session.run(f"warm {n}"))
    exporter.clear()
    return session, exporter


def measure(warm: int, rounds: int) -> dict[str, float]:
    loop = asyncio.new_event_loop()
    modes = ("off", "on", "uninstrumented")
    sessions = {mode: _session(loop, warm, mode) for mode in modes}
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    gc.collect()
    for _ in range(rounds):
        for mode in modes:
            session, exporter = sessions[mode]
            started = time.perf_counter()
            loop.run_until_complete(session.run("prompt"))
            samples[mode].append(time.perf_counter() - started)
            exporter.clear()
    loop.close()
    return {mode: statistics.median(values) * 1e6 for mode, values in samples.items()}


def sdk_floor(rounds: int = 2000) -> dict[str, float]:
    """What the OpenTelemetry SDK alone costs for one such turn: four spans
    with attributes into the in-memory exporter, and seven histogram records,
    with no Prism code involved (medians, microseconds)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("floor")
    histogram = (
        MeterProvider(metric_readers=[InMemoryMetricReader()])
        .get_meter("floor")
        .create_histogram("h")
    )
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "p",
        "gen_ai.request.model": "m",
    }

    def four_spans() -> None:
        root = tracer.start_span("run", attributes={**attributes, "a": "x", "b": "y", "c": "z"})
        context = trace.set_span_in_context(root)
        for name in ("chat", "tool", "chat"):
            span = tracer.start_span(name, context=context, attributes={**attributes, "i": 1})
            span.set_attributes({"in": 1, "out": 2, "cached": 3})
            span.end()
        root.end()

    def seven_records() -> None:
        for _ in range(7):
            histogram.record(5, attributes)

    out: dict[str, float] = {}
    for work in (four_spans, seven_records):
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
            exporter.clear()
        out[work.__name__] = statistics.median(times) * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=300, help="turns of history (4 messages each)")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    result = measure(args.warm, args.rounds)
    off = result["off"]
    print(f"history: {args.warm * 4} messages, {args.rounds} interleaved rounds, median per turn")
    for mode, micros in result.items():
        print(f"  {mode:<15} {micros:8.1f} us   {micros - off:+7.1f} us vs off")
    floor = sdk_floor()
    print("OpenTelemetry SDK alone, same turn shape (no Prism code):")
    for name, micros in floor.items():
        print(f"  {name:<15} {micros:8.1f} us")


if __name__ == "__main__":
    main()
