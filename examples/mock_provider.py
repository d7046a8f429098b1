"""Script a provider, stream it, and check it with the conformance helpers."""

from __future__ import annotations

import anyio

from prism import create_mock_provider, create_provider_registry
from prism.contracts import ProviderRequest
from prism.providers import provider_done, provider_text_delta, provider_tool_call, provider_usage
from prism.testing import assert_provider_stream_conforms

REQUEST: ProviderRequest = {
    "model": {"provider": "mock", "model": "demo"},
    "messages": [{"role": "user", "content": [{"type": "text", "text": "What is 2 + 2?"}]}],
}


async def main() -> None:
    # One list per provider turn: first a tool call, then the answer.
    provider = create_mock_provider(
        [
            [provider_tool_call("call_1", "add", {"a": 2, "b": 2}), provider_done("tool_calls")],
            [
                provider_text_delta("It is "),
                provider_text_delta("4."),
                provider_usage(input_tokens=12),
                provider_done("stop"),
            ],
        ]
    )
    registry = create_provider_registry()
    registry.register_provider(provider)
    registry.register_model(
        {"provider": "mock", "model": "demo", "limits": {"contextWindow": 8000}}
    )

    resolved = registry.resolve_provider("mock")
    async for event in resolved.generate(REQUEST):
        print("turn 1:", event["type"])
    events = await assert_provider_stream_conforms(
        resolved, REQUEST, expect_text="It is 4.", expect_usage={"inputTokens": 12}
    )
    print("turn 2:", [event["type"] for event in events])
    print("requests recorded:", len(provider.requests))


if __name__ == "__main__":
    anyio.run(main)
