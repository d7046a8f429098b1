"""Trace a tool-using run and print its span tree (needs the ``otel`` extra).

python examples/telemetry.py
"""

from __future__ import annotations

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
    provider_usage,
)
from prism.runtime import create_agent
from prism.telemetry import instrument
from prism.tools import define_tool


def print_tree(spans: list[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            usage = span.attributes.get("gen_ai.usage.input_tokens") if span.attributes else None
            suffix = f"  (input tokens: {usage})" if usage is not None else ""
            print(f"{'  ' * depth}{span.name}{suffix}")
            walk(span.context.span_id, depth + 1)

    walk(None, 0)


async def main() -> None:
    memory = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(memory))
    # The console exporter prints each span as it finishes (children first);
    # in production an OTLP exporter sends them to a collector instead.
    console = ConsoleSpanExporter(formatter=lambda span: f"exported: {span.name}\n")
    tracer_provider.add_span_processor(SimpleSpanProcessor(console))

    provider = create_mock_provider(
        [
            [
                provider_tool_call("call_1", "add", {"a": 2, "b": 3}),
                provider_usage(input_tokens=42, output_tokens=7),
                provider_done("tool_use"),
            ],
            [
                provider_text_delta("2 + 3 = 5"),
                provider_usage(input_tokens=55, output_tokens=5),
                provider_done("stop"),
            ],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[define_tool("add", lambda args, ctx: args["a"] + args["b"])],
    )
    instrument(agent, tracer_provider=tracer_provider)
    result = await agent.create_session("telemetry-demo").run("What is 2 + 3?")
    print(result.text)
    print("span tree:")
    print_tree(list(memory.get_finished_spans()))


anyio.run(main)
