"""Neuralwatt preset: an OpenAI-compatible inference cloud serving open
models. The base URL, model list, limits and prices are illustrative and
unverified (no account was used to check them): pass ``base_url=`` or a
``--model`` your account page shows when they differ. Prices are 0 because
none are published in a form this preset can rely on; ``estimate_cost`` then
reports 0 rather than a guess."""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import OpenAICompatibleProvider, RequestPolicy
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "neuralwatt"

NEURALWATT_PACKAGE = ProviderPackage(
    name=NAME,
    title="Neuralwatt",
    base_url="https://api.neuralwatt.com/v1",
    auth=AuthDescriptor(env_vars=("NEURALWATT_API_KEY",), key_url="https://portal.neuralwatt.com"),
    models=model_table(
        NAME,
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 262_144, 65_536, 0.0, 0.0, 0.0),
        ("openai/gpt-oss-120b", 131_072, 32_768, 0.0, 0.0, 0.0),
    ),
    default_model="openai/gpt-oss-120b",
    request_policy=RequestPolicy(thinking="reasoning_content"),
)


def create_neuralwatt_provider(
    api_key: str | None = None, **kwargs: Any
) -> OpenAICompatibleProvider:
    """Neuralwatt provider; keyword arguments as ``create_preset_provider``."""
    return create_preset_provider(NEURALWATT_PACKAGE, api_key, **kwargs)
