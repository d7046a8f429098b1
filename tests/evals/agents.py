"""A mock agent for the eval tests: a function model whose replies depend on
the question, so one agent serves every case (and is deterministic)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio

from prism import create_agent, create_mock_provider, define_tool
from prism.providers import provider_done, provider_error, provider_text_delta, provider_tool_call
from prism.runtime import Agent

USAGE = {"inputTokens": 100, "outputTokens": 20}


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, Mapping))


class QaModel:
    """The replies: capitals, a weather tool call, JSON, a flaky question that
    fails with a retryable error ``flaky_failures`` times, and a question
    that never finishes (for timeouts)."""

    def __init__(self, *, flaky_failures: int = 1, wrong: frozenset[str] = frozenset()) -> None:
        self.flaky_failures = flaky_failures
        self.wrong = wrong
        self.flaky_calls = 0

    async def __call__(self, request: Mapping[str, Any]) -> list[Any]:
        messages = request["messages"]
        last = messages[-1]
        if last.get("role") == "tool":
            return [
                provider_text_delta(f"Weather: {last['content'][0]['result']}"),
                provider_done(usage=USAGE),
            ]
        question = _text(last)
        if "never" in question:
            await anyio.sleep_forever()
        if "flaky" in question:
            self.flaky_calls += 1
            if self.flaky_calls <= self.flaky_failures:
                return [provider_error("overloaded", "overloaded", status=529, retryable=True)]
            return [provider_text_delta("steady now"), provider_done(usage=USAGE)]
        if question.startswith("weather in "):
            city = question.removeprefix("weather in ")
            return [provider_tool_call("c1", "weather", {"city": city}), provider_done(usage=USAGE)]
        if "json" in question:
            reply = json.dumps({"city": "Oslo", "celsius": 4.5})
        elif "France" in question:
            reply = "Lyon" if "france" in self.wrong else "Paris"
        elif "Japan" in question:
            reply = "The capital is Tokyo."
        else:
            reply = "I do not know."
        return [provider_text_delta(reply), provider_done(usage=USAGE)]


def qa_agent(model: QaModel | None = None, *, delay_ms: float = 0) -> Agent:
    weather = define_tool(
        "weather",
        lambda args, ctx: f"sunny in {args['city']}",
        description="The weather in a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    return create_agent(
        model={"provider": "mock", "model": "qa"},
        provider=create_mock_provider(model or QaModel(), delay_ms=delay_ms),
        tools=[weather],
        # The agent's own retry (on by default) would absorb a flaky model's
        # errors; these tests measure the eval runner's retries instead.
        retry=False,
    )


def judge_provider(verdict: str) -> Any:
    """A judge that always answers ``verdict``."""
    return create_mock_provider([provider_text_delta(verdict), provider_done()])
