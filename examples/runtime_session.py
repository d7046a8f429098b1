"""Runtime walkthrough: stream a run, steer it, queue a follow-up, abort one,
switch the model, and read the session state. Mock provider, no network."""

from __future__ import annotations

from typing import Any

import anyio

from prism import RunAbortedError, create_mock_provider, define_tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent


def reply(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done()]


async def main() -> None:
    provider = create_mock_provider(
        [
            reply("Hello!"),  # run 1
            [provider_tool_call("c1", "search", {"q": "anyio"}), provider_done()],  # run 2
            reply("Found it; tests checked too."),  # run 2, after the steer
            reply("Summary: anyio is a compatibility layer."),  # run 2, the follow-up
            [provider_text_delta("this will be "), provider_text_delta("cut")],  # run 3
            reply("Switched model."),  # run 4
        ],
    )
    agent = create_agent(
        model={"provider": "mock", "model": "small"},
        provider=provider,
        tools=[define_tool("search", lambda args, ctx: f"results for {args['q']}")],
    )
    session = agent.create_session("walkthrough")

    # 1. stream(): every event of one run, as it happens
    async for event in session.stream("Hi"):
        print("stream:", event["type"])

    # 2. steer() lands before the next provider turn; follow_up() after the run's answer
    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "tool_call":
            session.steer("Also check the tests.")
            session.follow_up("Now summarize.")

    unsubscribe = session.subscribe(on_event)
    result = await session.run("Search for anyio")
    unsubscribe()
    print("run 2 roles:", [m["role"] for m in result.messages])
    print("run 2 answer:", result.text)

    # 3. abort(): cancels the run; nothing half-written is stored
    def abort_on_delta(event: dict[str, Any]) -> None:
        if event["type"] == "message_delta":
            session.abort("user pressed stop")

    unsubscribe = session.subscribe(abort_on_delta)
    try:
        await session.run("Write an essay")
    except RunAbortedError as error:
        print("run 3:", error, f"({error.code})")
    unsubscribe()

    # 4. set_model(): a model_change entry; later turns use it
    await session.set_model({"provider": "mock", "model": "large"})
    await session.run("Again, bigger")
    print("run 4 model:", provider.requests[-1]["model"]["model"])

    state = await session.state()
    print("state:", {k: state[k] for k in ("sessionId", "isRunning", "entryCount", "messageCount")})


if __name__ == "__main__":
    anyio.run(main)
