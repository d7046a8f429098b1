"""`make demo`: a real Prism session against the mock provider, no network.

The scripted model first asks for the `weather` tool, then answers with text
that uses the tool's result. Every event the session emits is printed, then
the stored session entries. The session lives in the embedded default store,
a JSONL file (here in a temporary directory), and is reopened from that file
by a fresh agent to show it survives the process that wrote it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_mock_provider, define_tool
from prism.providers import (
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
    provider_usage,
)
from prism.runtime import create_agent
from prism.stores import create_jsonl_session_store


def weather(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"city": args["city"], "forecast": "sunny", "celsius": 21}


def describe(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "message_delta":
        return f"{kind:<16} {event['delta']['type']}: {event['delta']['text']!r}"
    if kind == "tool_call":
        call = event["toolCall"]
        return f"{kind:<16} {call['name']}({call['arguments']}) id={call['id']}"
    if kind == "tool_result":
        return f"{kind:<16} {event['result']['name']} -> {event['result']['value']}"
    if kind == "message_finished":
        return f"{kind:<16} usage={event.get('usage', {})}"
    if kind == "run_finished":
        return f"{kind:<16} toolRounds={event['toolRounds']} usage={event['usage']}"
    if kind == "error":
        return f"{kind:<16} {event['error']}"
    return kind


async def main(directory: Path) -> None:
    sessions_file = directory / "sessions.jsonl"
    provider = create_mock_provider(
        [
            # provider turn 1: think, then call the tool
            [
                provider_thinking_delta("The user wants the weather; ask the tool."),
                provider_tool_call("call_1", "weather", {"city": "Lisbon"}),
                provider_usage(input_tokens=42, output_tokens=9),
                provider_done("tool_use"),
            ],
            # provider turn 2: answer with the tool's result
            [
                provider_text_delta("It is sunny in Lisbon, "),
                provider_text_delta("21 °C."),
                provider_usage(input_tokens=61, output_tokens=8),
                provider_done("stop"),
            ],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        system="You are a concise weather assistant.",
        tools=[
            define_tool(
                "weather",
                weather,
                description="Current weather for a city",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            )
        ],
    )
    session = agent.create_session("demo", store=create_jsonl_session_store(sessions_file))
    session.subscribe(lambda event: print("event:", describe(event)))

    result = await session.run("What's the weather in Lisbon?")
    print()
    print("answer:", result.text)
    print("stored entries:")
    for entry in await session.entries():
        message = entry["message"]  # type: ignore[typeddict-item]
        kinds = ",".join(block["type"] for block in message["content"])
        print(
            f"  {entry['id'][:14]}… parent={str(entry['parentId'])[:14]:<15} {message['role']:<9} {kinds}"
        )
    print("state:", await session.state())

    lines = sessions_file.read_text(encoding="utf-8").splitlines()
    print(f"session file: {len(lines)} lines")
    # A fresh agent (as a new process would build) reads the session back.
    reopened_agent = create_agent(model={"provider": "mock", "model": "demo"}, provider=provider)
    reopened = await reopened_agent.open_session(
        "demo", store=create_jsonl_session_store(sessions_file)
    )
    roles = [message["role"] for message in await reopened.messages()]
    print("reopened from file:", roles)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="prism-demo-") as tmp:
        anyio.run(main, Path(tmp))
