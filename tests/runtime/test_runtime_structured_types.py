"""Structured output for any type a pydantic TypeAdapter accepts, in each
output mode (tool, native response format, prompted)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from prism import ConfigError, StructuredOutputError, create_mock_provider
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent

pytestmark = pytest.mark.anyio

MODEL = {"provider": "mock", "model": "m"}


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


class Opaque:
    """A plain class: pydantic has no schema for it."""


def text_turn(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done("stop")]


def final_call(arguments: dict[str, Any]) -> list[Any]:
    return [provider_tool_call("c1", "final_result", arguments), provider_done("tool_use")]


def system_text(request: Any) -> str:
    return "\n".join(
        block["text"]
        for message in request["messages"]
        if message["role"] == "system"
        for block in message["content"]
    )


async def test_tool_mode_wraps_a_list_of_ints() -> None:
    provider = create_mock_provider([final_call({"response": [3, 1, 2]})])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run("Numbers?", output_type=list[int])
    assert result.output == [3, 1, 2]
    parameters = provider.requests[0]["tools"][0]["parameters"]
    assert parameters["required"] == ["response"]
    assert parameters["properties"]["response"] == {"items": {"type": "integer"}, "type": "array"}
    assert result.to_json()["output"] == [3, 1, 2]


async def test_tool_mode_takes_a_literal() -> None:
    provider = create_mock_provider([final_call({"response": "no"})])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run("?", output_type=Literal["yes", "no"])
    assert result.output == "no"
    assert provider.requests[0]["tools"][0]["parameters"]["properties"]["response"]["enum"] == [
        "yes",
        "no",
    ]


async def test_native_mode_sends_the_wrapped_union_schema() -> None:
    provider = create_mock_provider([text_turn('{"response": 42}')])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run("?", output_type=int | str, output_mode="native")
    assert result.output == 42
    request = provider.requests[0]
    assert "tools" not in request or not request["tools"]
    fmt = request["options"]["responseFormat"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "output"
    assert fmt["schema"]["properties"]["response"]["anyOf"] == [
        {"type": "integer"},
        {"type": "string"},
    ]


async def test_native_mode_keeps_defs_at_the_root_for_a_union_of_dataclasses() -> None:
    provider = create_mock_provider([text_turn('{"response": {"name": "Ada", "age": 36}}')])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run(
        "?", output_type=Point | Person, output_mode="response_format"
    )
    assert result.output == {"name": "Ada", "age": 36}
    schema = provider.requests[0]["options"]["responseFormat"]["schema"]
    assert set(schema["$defs"]) == {"Point", "Person"}
    assert "$defs" not in schema["properties"]["response"]


async def test_prompted_mode_puts_the_schema_in_the_instructions() -> None:
    provider = create_mock_provider([text_turn('```json\n{"x": 1, "y": 2}\n```')])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run("?", output_type=Point, output_mode="prompted")
    assert result.output == Point(1, 2)
    request = provider.requests[0]
    assert not request.get("tools") and "responseFormat" not in (request.get("options") or {})
    assert '"required":["x","y"]' in system_text(request)


async def test_prompted_mode_accepts_a_bare_value_for_a_wrapped_type() -> None:
    provider = create_mock_provider([text_turn("[1, 2]")])
    agent = create_agent(model=MODEL, provider=provider)
    result = await agent.create_session().run("?", output_type=list[int], output_mode="prompted")
    assert result.output == [1, 2]


async def test_output_that_never_validates_fails_with_a_clear_error() -> None:
    provider = create_mock_provider([text_turn('["a"]'), text_turn("not json at all")])
    agent = create_agent(model=MODEL, provider=provider)
    session = agent.create_session()
    with pytest.raises(StructuredOutputError) as caught:
        await session.run("?", output_type=list[int], output_mode="prompted", max_tool_rounds=1)
    message = str(caught.value)
    assert "not a valid list[int]" in message and "not valid JSON" in message
    # The first problem went back to the model, naming the type, not the value.
    correction = provider.requests[1]["messages"][-1]["content"][0]["text"]
    assert "not a valid list[int]" in correction and "output" in correction


async def test_a_type_without_a_schema_is_a_config_error_naming_it() -> None:
    provider = create_mock_provider([text_turn("x")])
    session = create_agent(model=MODEL, provider=provider).create_session()
    with pytest.raises(ConfigError, match="output_type Opaque: pydantic cannot build"):
        await session.run("?", output_type=Opaque)
    with pytest.raises(ConfigError, match="a type pydantic's TypeAdapter accepts"):
        await session.run("?", output_type=5)
    assert await session.entries() == [] and provider.requests == []
