"""Tool schemas checked where they are defined (issue 34 item 14): a ``$ref``
that cannot be resolved and a ``pattern`` the linear-time matcher cannot run
are ConfigErrors naming them; patterns run on the native matcher, so a
catastrophic pattern cannot block the event loop on model output."""

from __future__ import annotations

from typing import Any

import pytest

from prism import ConfigError, define_tool
from prism.security import NOOP_REDACTOR
from prism.tools import INVALID_ARGUMENTS, create_tool_registry, dispatch_tool_call

pytestmark = pytest.mark.anyio


def echo(args: dict[str, Any], ctx: Any) -> Any:
    return args


def schema_with(prop: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": prop}, **extra}


@pytest.mark.parametrize(
    ("schema", "ref", "where"),
    [
        (schema_with({"$ref": "#/$defs/missing"}), "#/$defs/missing", "properties/value"),
        (schema_with({"$ref": "#/nowhere/at/all"}), "#/nowhere/at/all", "properties/value"),
        (
            schema_with({"type": "array", "items": {"$ref": "https://example.com/s.json"}}),
            "https://example.com/s.json",
            "properties/value/items",
        ),
        ({"$ref": "other.json", "type": "object"}, "other.json", "(root)"),
    ],
)
def test_an_unresolvable_ref_is_a_config_error_naming_it(
    schema: dict[str, Any], ref: str, where: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        define_tool("t", echo, parameters=schema)
    message = str(caught.value)
    assert f"tool 't': parameters has a $ref that cannot be resolved at {where}: {ref!r}" in message


async def test_resolvable_refs_still_work() -> None:
    schema = {
        "type": "object",
        "$defs": {"name": {"type": "string", "minLength": 2}},
        "properties": {
            "first": {"$ref": "#/$defs/name"},
            "nested": {
                "$id": "https://example.com/nested",
                "$defs": {"n": {"type": "integer"}},
                "type": "object",
                "properties": {"count": {"$ref": "#/$defs/n"}},
            },
            # "$ref" here is data, not a reference.
            "note": {"type": "object", "default": {"$ref": "#/not/a/schema"}},
        },
    }
    registry = create_tool_registry([define_tool("t", echo, parameters=schema)])
    good = {"id": "c1", "name": "t", "arguments": {"first": "ab", "nested": {"count": 3}}}
    assert (await dispatch_tool_call(good, registry=registry, redactor=NOOP_REDACTOR)).get(
        "isError"
    ) is None  # type: ignore[arg-type]
    bad = {"id": "c2", "name": "t", "arguments": {"first": "ab", "nested": {"count": "x"}}}
    result = await dispatch_tool_call(bad, registry=registry, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert result["value"]["code"] == INVALID_ARGUMENTS


@pytest.mark.parametrize(
    ("schema", "pattern", "reason"),
    [
        (schema_with({"type": "string", "pattern": r"^(a)\1$"}), r"^(a)\1$", "backreferences"),
        (schema_with({"type": "string", "pattern": "^(?=a)"}), "^(?=a)", "look-around"),
        (
            {"type": "object", "patternProperties": {"(?<!x)y": {}}},
            "(?<!x)y",
            "look-around",
        ),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_a_config_error(
    schema: dict[str, Any], pattern: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        define_tool("t", echo, parameters=schema)
    message = str(caught.value)
    assert f"parameters pattern {pattern!r}" in message
    assert "not supported by the linear-time matcher" in message and reason in message


async def test_a_catastrophic_pattern_does_not_block_on_hostile_arguments() -> None:
    # ^(a+)+$ backtracks ~2**n steps in Python's re: 28 characters took
    # seconds on the event loop, 50,000 would never finish.
    schema = {
        "type": "object",
        "properties": {"value": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(b+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    registry = create_tool_registry([define_tool("t", echo, parameters=schema)])
    hostile = "a" * 50_000 + "!"
    call = {"id": "c1", "name": "t", "arguments": {"value": hostile}}
    result = await dispatch_tool_call(call, registry=registry, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert result["value"] == {
        "message": "arguments for tool 't' do not match its schema: "
        "args.value fails 'pattern' \"^(a+)+$\"",
        "code": INVALID_ARGUMENTS,
    }
    # Keys go through the same matcher (patternProperties, additionalProperties).
    key = "b" * 50_000 + "!"
    call = {"id": "c2", "name": "t", "arguments": {key: 1}}
    result = await dispatch_tool_call(call, registry=registry, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert result["value"]["code"] == INVALID_ARGUMENTS
    assert key not in result["value"]["message"]  # never the value
    ok = {"id": "c3", "name": "t", "arguments": {"value": "aaa", "bbb": 2}}
    assert (await dispatch_tool_call(ok, registry=registry, redactor=NOOP_REDACTOR)).get(
        "isError"
    ) is None  # type: ignore[arg-type]
    wrong = {"id": "c4", "name": "t", "arguments": {"bbb": "two"}}
    result = await dispatch_tool_call(wrong, registry=registry, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert result["value"]["message"].endswith("args.bbb fails 'type' \"integer\"")


async def test_dollar_ends_the_string_as_in_json_schema() -> None:
    # JSON Schema patterns are ECMA-262: "$" is the end of the string. Python's
    # re also matched before a trailing newline, so "abc\n" passed "^abc$".
    schema = schema_with({"type": "string", "pattern": "^abc$"})
    registry = create_tool_registry([define_tool("t", echo, parameters=schema)])
    call = {"id": "c1", "name": "t", "arguments": {"value": "abc\n"}}
    result = await dispatch_tool_call(call, registry=registry, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert result.get("isError") is True
