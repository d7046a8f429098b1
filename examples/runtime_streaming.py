"""Scripts and streaming: run_sync without an event loop, the final result of
an ``async with session.stream(...)`` block, breaking out of a stream (the
session is free again at once), opening only an existing session, and
``compaction=True``. Mock provider, no network."""

from __future__ import annotations

from typing import Any

import anyio

from prism import UnknownNameError, create_mock_provider
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent

MODEL = {"provider": "mock", "model": "demo", "limits": {"contextWindow": 8_000}}


def reply(request: Any) -> list[Any]:
    last = request["messages"][-1]["content"][0]["text"]
    return [provider_text_delta("echo: "), provider_text_delta(last), provider_done()]


agent = create_agent(model=MODEL, provider=create_mock_provider(reply), compaction=True)
print("compaction trigger:", agent.config.compaction.trigger)  # type: ignore[union-attr]

# 1. A script: no event loop, no anyio.run.
session = agent.create_session("script")
print("run_sync:", session.run_sync("hello").text)


async def main() -> None:
    # 2. async with: the run ends with the block; the result is on the stream.
    async with session.stream("streamed") as events:
        async for event in events:
            if event["type"] == "message_delta":
                print("delta:", event["delta"]["text"])
    assert events.result is not None
    print("result:", events.result.text)

    # 3. break out of a plain async for: the run is aborted, the session freed.
    async for event in session.stream("interrupted"):
        if event["type"] == "message_delta":
            break
    print("running after break:", session.is_running)
    print("next run:", (await session.run("again")).text)

    # 4. open only what exists
    try:
        await agent.open_session("no-such-session", must_exist=True)
    except UnknownNameError as error:
        print("must_exist:", error.code)
    reopened = await agent.open_session("script", must_exist=True)
    print("reopened messages:", len(await reopened.messages()))


anyio.run(main)
