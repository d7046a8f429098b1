"""Kimi (Moonshot AI) preset. Moonshot reports cache hits as a top-level
``usage.cached_tokens`` (handled by the adapter) and its thinking models want
their ``reasoning_content`` back on assistant turns that made tool calls."""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import OpenAICompatibleProvider, RequestPolicy
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "kimi"

KIMI_PACKAGE = ProviderPackage(
    name=NAME,
    title="Kimi (Moonshot AI)",
    base_url="https://api.moonshot.ai/v1",
    auth=AuthDescriptor(
        env_vars=("MOONSHOT_API_KEY", "KIMI_API_KEY"),
        key_url="https://platform.moonshot.ai/console/api-keys",
    ),
    models=model_table(
        NAME,
        ("kimi-k2-0905-preview", 262_144, 32_768, 0.6, 2.5, 0.15),
        ("kimi-k2-turbo-preview", 262_144, 32_768, 2.4, 10.0, 0.6),
        ("kimi-k2-thinking", 262_144, 32_768, 0.6, 2.5, 0.15),
    ),
    default_model="kimi-k2-0905-preview",
    request_policy=RequestPolicy(thinking="reasoning_content"),
)


def create_kimi_provider(api_key: str | None = None, **kwargs: Any) -> OpenAICompatibleProvider:
    """Kimi provider; keyword arguments as ``create_preset_provider``."""
    return create_preset_provider(KIMI_PACKAGE, api_key, **kwargs)
