"""OpenCode Go preset: a subscription gateway serving open models over the
Chat Completions wire format. The base URL and model list are illustrative;
pass ``base_url=`` if your account page shows another endpoint. Prices are 0:
usage is covered by the subscription, so per-token cost is not metered here."""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import OpenAICompatibleProvider, RequestPolicy
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "opencode-go"

OPENCODE_GO_PACKAGE = ProviderPackage(
    name=NAME,
    title="OpenCode Go",
    base_url="https://opencode.ai/zen/go/v1",
    auth=AuthDescriptor(env_vars=("OPENCODE_API_KEY",), key_url="https://opencode.ai/auth"),
    models=model_table(
        NAME,
        ("glm-4.6", 200_000, 128_000, 0.0, 0.0, 0.0),
        ("kimi-k2", 262_144, 32_768, 0.0, 0.0, 0.0),
    ),
    default_model="glm-4.6",
    request_policy=RequestPolicy(thinking="reasoning_content"),
)


def create_opencode_go_provider(
    api_key: str | None = None, **kwargs: Any
) -> OpenAICompatibleProvider:
    """OpenCode Go provider; keyword arguments as ``create_preset_provider``."""
    return create_preset_provider(OPENCODE_GO_PACKAGE, api_key, **kwargs)
