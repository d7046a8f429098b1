"""Testing an agent: build it as production does, then swap the model for a
mock with agent.with_provider(...). The copy shares nothing mutable with the
original (registries, store, listeners), so the production agent is untouched.
See docs/testing.md for the full pytest setup."""

from __future__ import annotations

from typing import Any

import anyio

from prism import create_mock_provider, tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.runtime import Agent, create_agent
from prism.security import NOOP_REDACTOR


@tool
def forecast(city: str) -> dict[str, object]:
    """Today's forecast for a city."""
    return {"city": city, "temperature": 21}


def build_agent() -> Agent:
    # Production talks to a local OpenAI-compatible server (no connection is opened here).
    provider = create_openai_compatible_provider(
        base_url="http://localhost:8000/v1", redactor=NOOP_REDACTOR
    )
    return create_agent(
        model={"provider": "openai-compatible", "model": "local"},
        provider=provider,
        tools=[forecast],
    )


def function_model(request: dict[str, Any]) -> list[Any]:
    """A mock that answers from the request: call the tool, then report its result."""
    last = request["messages"][-1]
    if last["role"] == "user":
        return [provider_tool_call("c1", "forecast", {"city": "Oslo"}), provider_done("tool_use")]
    value = last["content"][0]["result"]
    return [
        provider_text_delta(f"{value['temperature']} degrees in {value['city']}"),
        provider_done("stop"),
    ]


async def main() -> None:
    production = build_agent()
    mock = create_mock_provider(function_model)
    agent = production.with_provider(mock)
    session = agent.create_session("test")
    events: list[str] = []
    session.subscribe(lambda event: events.append(event["type"]))
    result = await session.run("Weather in Oslo?")
    print("answer:", result.text)
    print("requests seen by the mock:", len(mock.requests))
    print("tool events:", [e for e in events if e.startswith("tool_")])
    print("production store untouched:", await production.create_session("test").entries() == [])


anyio.run(main)
