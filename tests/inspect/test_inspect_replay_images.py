"""Replay keeps a tool's images: the stored result is put back whole,
images included (they follow the tool_result block in the tool message)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.image_samples import png_bytes

from prism.inspect import SessionView, find_runs, replay_run
from prism.providers import create_mock_provider, provider_done, provider_tool_call
from prism.runtime import create_agent
from prism.tools import ImageContent, ToolOutput, define_tool

pytestmark = pytest.mark.anyio


async def test_replayed_tool_result_carries_the_stored_images() -> None:
    png = png_bytes(2, 2)

    def script(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_done()]
        return [provider_tool_call("c1", "shot", {}), provider_done("tool_use")]

    shot = define_tool("shot", lambda a, c: ToolOutput("pic", [ImageContent(png, "image/png")]))
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(script),
        tools=[shot],
    )
    session = agent.create_session("s")
    await session.run("go")
    view = SessionView("s", await session.entries())
    events = [event async for event in replay_run(view.branch, find_runs(view.branch)[-1])]
    result = next(e for e in events if e["type"] == "tool_result")["result"]
    assert result["value"] == "pic"
    encoded = base64.b64encode(png).decode()
    assert result["images"] == [
        {"type": "image", "mimeType": "image/png", "dataLength": len(encoded)}
    ]
