"""A tool result with an image: the coding ``read`` tool on a PNG, an agent
on the mock provider, and what the next request carries, for a model that
sees images and for one that does not (docs/tools.md, "Returning images")."""

from __future__ import annotations

import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any

import anyio

from prism.coding import create_coding_tools
from prism.providers import create_mock_provider, provider_done, provider_tool_call
from prism.runtime import create_agent
from prism.security import create_execution_policy, create_redactor


def tiny_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\x00\x80\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_done()]
    return [provider_tool_call("c1", "read", {"path": "chart.png"}), provider_done("tool_use")]


async def look(workspace: Path, model: dict[str, Any]) -> None:
    redactor = create_redactor([])
    provider = create_mock_provider(script)
    agent = create_agent(
        model=model,
        provider=provider,
        tools=create_coding_tools(
            workspace,
            execution_policy=create_execution_policy([workspace], [], redactor=redactor),
            redactor=redactor,
        ),
    )
    session = agent.create_session()
    async with session.stream("What does chart.png show?") as events:
        async for event in events:
            if event["type"] == "tool_result":
                print("event images:", event["result"]["images"])
    tool_message = provider.requests[-1]["messages"][-1]
    for block in tool_message["content"]:
        shown = {k: (v[:12] + "..." if k == "data" else v) for k, v in block.items()}
        print(f"  {model['model']} sees:", shown)


async def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch)
        (workspace / "chart.png").write_bytes(tiny_png(4, 3))
        await look(workspace, {"provider": "mock", "model": "vision-model"})
        await look(workspace, {"provider": "mock", "model": "text-model", "input": ["text"]})


if __name__ == "__main__":
    anyio.run(main)
