"""Catching Prism's errors by group (docs/errors.md): a host catches
``RunError`` for "the run failed", ``ConfigError`` for bad options and
``StoreError`` for storage, and reads the wire ``code`` for the detail.
Mock provider, no network."""

from __future__ import annotations

import anyio

from prism import create_mock_provider, define_tool
from prism.errors import ConfigError, RunError, SessionStateError
from prism.providers import provider_done, provider_error, provider_tool_call
from prism.runtime import create_agent


async def main() -> None:
    loop_forever = [provider_tool_call("c", "ping", {}), provider_done("tool_calls")]
    provider = create_mock_provider(
        [
            [provider_error("upstream overloaded", "overloaded")],  # run 1
            loop_forever,  # run 2: asks for a second tool round, one is allowed
            loop_forever,
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[define_tool("ping", lambda args, ctx: "pong")],
        max_tool_rounds=1,
        retry=False,
    )
    session = agent.create_session("errors")

    for prompt in ("first", "second"):
        try:
            await session.run(prompt)
        except RunError as error:  # provider, abort, tool rounds, structured output, ...
            print(f"run failed: {type(error).__name__} code={error.code}")

    try:
        session.steer("too late")
    except SessionStateError as error:
        print(f"session state: {type(error).__name__} code={error.code}")

    try:
        create_agent(
            model={"provider": "mock", "model": "demo"}, provider=provider, max_tool_rounds=-1
        )
    except ConfigError as error:
        print(f"bad option: code={error.code}")


if __name__ == "__main__":
    anyio.run(main)
