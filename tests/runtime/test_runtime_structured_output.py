"""Structured output: run(..., output_type=...) asks for JSON matching the
type's schema, validates it, corrects within max_tool_rounds, and returns the
parsed value on the result."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from prism import ConfigError, StructuredOutputError, create_mock_provider, define_tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR

MODEL = {"provider": "mock", "model": "m"}


class Weather(BaseModel):
    city: str
    celsius: float = Field(ge=-90, le=60)


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


def text_turn(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done("stop")]


def final_call(call_id: str, arguments: dict[str, Any]) -> list[Any]:
    return [provider_tool_call(call_id, "final_result", arguments), provider_done("tool_use")]


@pytest.mark.anyio
async def test_tool_mode_corrects_an_invalid_answer_then_returns_the_model() -> None:
    provider = create_mock_provider(
        [
            final_call("c1", {"city": "Oslo", "celsius": 400}),
            final_call("c2", {"city": "Oslo", "celsius": 4.5}),
        ]
    )
    events: list[dict[str, Any]] = []
    agent = create_agent(model=MODEL, provider=provider)
    session = agent.create_session("s")
    session.subscribe(events.append)
    result = await session.run("Weather in Oslo?", output_type=Weather)
    assert result.output == Weather(city="Oslo", celsius=4.5)
    assert result.to_json()["output"] == {"city": "Oslo", "celsius": 4.5}
    assert result.message is not None and result.message["role"] == "assistant"
    first = provider.requests[0]
    assert [t["name"] for t in first["tools"]] == ["final_result"]
    assert first["tools"][0]["parameters"]["required"] == ["city", "celsius"]
    assert "final_result" in first["messages"][0]["content"][0]["text"]
    assert len(provider.requests) == 2
    errors = [e["result"] for e in events if e["type"] == "tool_result"]
    assert errors[0]["isError"] is True and errors[0]["value"]["code"] == "invalid_output"
    assert "output.celsius" in errors[0]["value"]["message"]
    assert "400" not in errors[0]["value"]["message"]
    assert "isError" not in errors[1]
    # The session's history pairs every call with a result.
    kinds = [e["message"]["role"] for e in await session.entries()]
    assert kinds == ["user", "assistant", "tool", "assistant", "tool"]


@pytest.mark.anyio
async def test_tool_mode_runs_other_tools_first_and_accepts_plain_json_text() -> None:
    def locate(name: str) -> dict[str, int]:
        """Where someone is."""
        return {"x": 1, "y": 2}

    provider = create_mock_provider(
        [
            [provider_tool_call("c1", "locate", {"name": "ada"}), provider_done("tool_use")],
            text_turn('```json\n{"x": 1, "y": 2}\n```'),
        ]
    )
    agent = create_agent(model=MODEL, provider=provider, tools=[define_tool(locate)])
    result = await agent.create_session("s").run("Where is Ada?", output_type=Point)
    assert result.output == Point(1, 2)
    assert [t["name"] for t in provider.requests[0]["tools"]] == ["locate", "final_result"]


@pytest.mark.anyio
async def test_response_format_mode_with_a_typed_dict_and_a_correction() -> None:
    provider = create_mock_provider(
        [text_turn("Ada is 36."), text_turn('{"name": "Ada", "age": 36}')]
    )
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session("s").run(
        "Who?", output_type=Person, output_mode="response_format"
    )
    assert result.output == {"name": "Ada", "age": 36}
    assert result.text == '{"name": "Ada", "age": 36}'
    first = provider.requests[0]
    assert "tools" not in first or first["tools"] == []
    assert first["options"]["responseFormat"]["name"] == "Person"
    correction = provider.requests[1]["messages"][-1]
    assert correction["role"] == "user"
    assert "not a valid Person: the reply is not valid JSON" in correction["content"][0]["text"]


@pytest.mark.anyio
async def test_invalid_answers_past_max_tool_rounds_fail_the_run() -> None:
    provider = create_mock_provider([text_turn("{}"), text_turn('{"city": "x"}')])
    agent = create_agent(model=MODEL, provider=provider)
    session = agent.create_session("s")
    with pytest.raises(
        StructuredOutputError, match=r"not a valid Weather after max_tool_rounds \(1\)"
    ):
        await session.run(
            "?", output_type=Weather, output_mode="response_format", max_tool_rounds=1
        )
    assert len(provider.requests) == 2
    assert not session.is_running


@pytest.mark.anyio
async def test_openai_compatible_sends_response_format() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        reply = {"choices": [{"index": 0, "delta": {"content": '{"x": 3, "y": 4}'}}]}
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in (reply, end)) + "data: [DONE]\n\n"
        return httpx.Response(
            200, content=sse.encode(), headers={"content-type": "text/event-stream"}
        )

    provider = create_openai_compatible_provider(
        base_url="https://llm.example.invalid/v1",
        api_key="sk-test-0123456789abcdef",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        redactor=NOOP_REDACTOR,
    )
    agent = create_agent(model={"provider": "openai-compatible", "model": "m"}, provider=provider)
    result = await agent.create_session("s").run("Point?", output_type=Point)
    assert result.output == Point(3, 4)
    sent = bodies[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Point"
    assert sent["json_schema"]["schema"]["required"] == ["x", "y"]
    assert "tools" not in bodies[0]


@pytest.mark.anyio
async def test_bad_output_options_are_refused_before_anything_is_stored() -> None:
    provider = create_mock_provider([text_turn("x")])
    agent = create_agent(
        model=MODEL, provider=provider, tools=[define_tool("final_result", lambda a, c: 1)]
    )
    session = agent.create_session("s")
    with pytest.raises(ConfigError, match="a type pydantic's TypeAdapter accepts"):
        await session.run("?", output_type="Point")
    with pytest.raises(ConfigError, match="output_mode applies only with output_type"):
        await session.run("?", output_mode="tool")
    with pytest.raises(ConfigError, match="output_mode must be one of"):
        await session.run("?", output_type=Point, output_mode="json")  # type: ignore[typeddict-item]
    with pytest.raises(ConfigError, match="already has a tool of that name"):
        await session.run("?", output_type=Point)
    assert await session.entries() == [] and provider.requests == []


def test_response_format_option_is_checked_by_the_adapter() -> None:
    from prism.providers.openai_compatible import RequestSerializationError

    provider = create_openai_compatible_provider(
        base_url="http://localhost:1/v1", redactor=NOOP_REDACTOR
    )
    request: Any = {"model": {"provider": "p", "model": "m"}, "messages": []}
    body = provider.build_body({**request, "options": {"responseFormat": {"type": "json_object"}}})
    assert body["response_format"] == {"type": "json_object"}
    with pytest.raises(RequestSerializationError, match=r"options\.responseFormat must be"):
        provider.build_body({**request, "options": {"responseFormat": {"type": "xml"}}})
