"""Dispatch never raises for garbage calls and only executes valid ones."""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from prism.security import NOOP_REDACTOR
from prism.tools import ToolContext, create_tool_registry, define_tool, dispatch_tool_call

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
CALLS = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.text(max_size=4), st.integers()),
            "name": st.one_of(st.sampled_from(["count", "denied", "nope", ""]), JSON),
            "arguments": st.one_of(
                JSON, st.fixed_dictionaries({"n": st.one_of(st.integers(), JSON)})
            ),
        }
    ),
)


@settings(max_examples=200, deadline=None)
@given(CALLS)
def test_dispatch_is_total_and_executes_only_valid_calls(call: Any) -> None:
    executed: list[dict[str, Any]] = []

    def count(args: dict[str, Any], ctx: ToolContext) -> int:
        executed.append(args)
        return 1

    registry = create_tool_registry(
        [define_tool("count", count, parameters=SCHEMA), define_tool("denied", count)],
        deny=["denied"],
    )
    result = anyio.run(lambda: dispatch_tool_call(call, registry=registry, redactor=NOOP_REDACTOR))
    assert isinstance(result, dict) and "toolCallId" in result
    valid = (
        isinstance(call, dict)
        and isinstance(call.get("id"), str)
        and call["id"] != ""
        and call.get("name") == "count"
        and isinstance(call.get("arguments"), dict)
        and set(call["arguments"]) == {"n"}
        and type(call["arguments"]["n"]) is int
    )
    assert bool(executed) == valid
    assert result.get("isError", False) is (not valid)
