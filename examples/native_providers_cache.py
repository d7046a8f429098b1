"""The Anthropic Messages adapter against Prism's cache simulator on loopback,
then a token estimate that calibrates itself from the usage it reports.

No network, no key: `prism.testing.CacheSimulator` speaks the Messages API
and bills prompt caching by the `cache_control` breakpoints it receives.
Run: python examples/native_providers_cache.py
"""

from __future__ import annotations

from typing import Any

import anyio

from prism.attention import TokenCalibration
from prism.middleware import create_middleware_registry
from prism.providers import AnthropicRequestPolicy, create_anthropic_provider
from prism.providers.packages import anthropic_model
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.testing import CacheSimulator

SYSTEM = "You are a careful coding agent. " * 300  # long enough to cache (>= 1024 tokens)


def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
    turn = len(body["messages"])
    return [
        {"type": "thinking", "thinking": "Plan the reply.", "signature": f"sig-{turn}"},
        {"type": "text", "text": f"Answer {turn}."},
    ]


async def main() -> None:
    calibration = TokenCalibration()
    middleware = create_middleware_registry()
    middleware.use("provider_request", calibration.provider_request_middleware)
    with CacheSimulator(responder=answer) as simulator:
        for mode in ("auto", "system"):
            provider = create_anthropic_provider(
                base_url=simulator.url,
                api_key="sk-example-not-a-real-key",
                request_policy=AnthropicRequestPolicy(cache_breakpoints=mode),
                redactor=NOOP_REDACTOR,
            )
            agent = create_agent(
                model=anthropic_model("claude-sonnet-4-5"),
                provider=provider,
                system=SYSTEM,
                middleware=middleware,
            )
            session = agent.create_session()
            session.subscribe(calibration.listener)
            for prompt in ("first question " * 200, "second " * 200, "third " * 200):
                result = await session.run(prompt)
            usage = result.usage
            print(
                f"{mode}: last turn read {usage.get('cacheReadTokens', 0)} of "
                f"{usage['inputTokens']} input tokens from the cache"
            )
            await provider.aclose()
    snapshot = calibration.snapshot("anthropic/claude-sonnet-4-5")
    print(f"calibrated after {snapshot['turns']} turns: {sorted(snapshot['ratios'])}")


if __name__ == "__main__":
    anyio.run(main)
