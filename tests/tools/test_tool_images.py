"""Tools returning images (``ToolOutput`` + ``ImageContent``): dispatch
turns them into ``images`` on the result, typed tools pass them through the
TypeAdapter path, bad images and secrets in base64 become tool errors, the
session stores them as image blocks, and events carry them without data."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from tests.image_samples import png_bytes

from prism.middleware import create_middleware_registry
from prism.providers import create_mock_provider, provider_done, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR, create_redactor
from prism.tools import (
    ImageContent,
    ToolOutput,
    create_tool_registry,
    define_tool,
    dispatch_tool_call,
    elide_image_data,
    tool,
)

pytestmark = pytest.mark.anyio
PNG = png_bytes(3, 2)
PNG64 = base64.b64encode(PNG).decode()


def shot(args: dict[str, Any], ctx: Any) -> ToolOutput:
    return ToolOutput("a 3x2 screenshot", [ImageContent(PNG, "image/png")])


async def dispatch(definition: Any, **kwargs: Any) -> dict[str, Any]:
    call = {"id": "c1", "name": definition.name, "arguments": {}}
    kwargs.setdefault("redactor", NOOP_REDACTOR)
    registry = create_tool_registry([definition])
    return dict(await dispatch_tool_call(call, registry=registry, **kwargs))  # type: ignore[arg-type]


async def test_dispatch_puts_images_next_to_the_value() -> None:
    result = await dispatch(define_tool("shot", shot))
    assert result["value"] == "a 3x2 screenshot"
    assert result["images"] == [{"type": "image", "data": PNG64, "mimeType": "image/png"}]
    assert not result.get("isError")


async def test_a_typed_tool_returns_images_through_the_type_adapter() -> None:
    @tool
    def snap(label: str = "x") -> ToolOutput:
        """Take a picture."""
        return ToolOutput({"label": label, "n": 1}, [ImageContent(PNG64, "image/png")])

    result = await dispatch(snap)
    assert result["value"] == {"label": "x", "n": 1}
    assert result["images"][0]["data"] == PNG64


def test_image_content_refuses_bad_input_at_construction() -> None:
    with pytest.raises(ValueError, match="mime_type must be one of"):
        ImageContent(PNG, "image/tiff")
    with pytest.raises(ValueError, match="empty"):
        ImageContent(b"", "image/png")
    with pytest.raises(ValueError, match="not valid base64"):
        ImageContent("not base64!!", "image/png")
    with pytest.raises(TypeError, match="ImageContent"):
        ToolOutput("x", ["not an image"])  # type: ignore[list-item]


async def test_a_tool_raising_on_a_bad_image_gets_a_tool_error() -> None:
    def bad(args: dict[str, Any], ctx: Any) -> ToolOutput:
        return ToolOutput("x", [ImageContent("%%%", "image/png")])

    result = await dispatch(define_tool("bad", bad))
    assert result["isError"] and "not valid base64" in result["value"]["message"]


async def test_base64_holding_a_secret_is_refused_not_corrupted() -> None:
    # Redacting inside base64 would leave data no provider decodes.
    secret = PNG64[8:24]
    result = await dispatch(define_tool("shot", shot), redactor=create_redactor([secret]))
    assert result["isError"] and "contains a configured secret" in result["value"]["message"]
    assert secret not in json.dumps(result)


async def test_tool_result_middleware_cannot_store_broken_images() -> None:
    middleware = create_middleware_registry()

    async def break_images(result: Any, next_: Any) -> Any:
        return {**(await next_(result)), "images": [{"type": "image", "data": 42}]}

    middleware.use("tool_result", break_images)
    result = await dispatch(define_tool("shot", shot), middleware=middleware)
    assert result["isError"] and "bad images: images[0]" in result["value"]["message"]


def test_elided_results_keep_shape_and_drop_data() -> None:
    result: Any = {"toolCallId": "c", "name": "n", "value": "v"}
    assert elide_image_data(result) is result
    result["images"] = [{"type": "image", "data": PNG64, "mimeType": "image/png"}]
    slim = elide_image_data(result)
    assert slim["images"] == [{"type": "image", "mimeType": "image/png", "dataLength": len(PNG64)}]
    assert result["images"][0]["data"] == PNG64  # the stored result is untouched


async def test_session_stores_image_blocks_and_events_elide_the_data() -> None:
    def script(request: Any) -> list[Any]:
        if any(m["role"] == "tool" for m in request["messages"]):
            return [provider_done()]
        return [provider_tool_call("c1", "shot", {}), provider_done("tool_use")]

    provider = create_mock_provider(script)
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[define_tool("shot", shot)],
    )
    session = agent.create_session("s")
    seen: list[dict[str, Any]] = []
    async with session.stream("go") as events:
        async for event in events:
            seen.append(event)
    results = [e for e in seen if e["type"] == "tool_result"]
    assert results[0]["result"]["images"][0]["dataLength"] == len(PNG64)
    assert PNG64 not in json.dumps(seen)
    tool_message = provider.requests[-1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"][1] == {"type": "image", "data": PNG64, "mimeType": "image/png"}
