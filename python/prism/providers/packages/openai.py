"""OpenAI (api.openai.com) preset.

OpenAI's Chat Completions takes no reasoning input, so ``thinking`` blocks in
history are omitted on purpose (they are the model's own output); output
limits go in ``max_completion_tokens`` (required by reasoning models); a
session's turns share a ``prompt_cache_key`` for cache hits.
"""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import (
    CachePolicy,
    OpenAICompatibleProvider,
    RequestPolicy,
)
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "openai"


OPENAI_PACKAGE = ProviderPackage(
    name=NAME,
    title="OpenAI",
    base_url="https://api.openai.com/v1",
    auth=AuthDescriptor(
        env_vars=("OPENAI_API_KEY",), key_url="https://platform.openai.com/api-keys"
    ),
    models=model_table(
        NAME,
        ("gpt-5", 400_000, 128_000, 1.25, 10.0, 0.125),
        ("gpt-5-mini", 400_000, 128_000, 0.25, 2.0, 0.025),
        ("gpt-4.1", 1_047_576, 32_768, 2.0, 8.0, 0.5),
        ("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1),
        ("gpt-4o-mini", 128_000, 16_384, 0.15, 0.6, 0.075),
    ),
    default_model="gpt-4.1-mini",
    request_policy=RequestPolicy(thinking="omit", max_tokens_field="max_completion_tokens"),
    cache_policy=CachePolicy(mode="prompt_cache_key"),
)


def create_openai_provider(api_key: str | None = None, **kwargs: Any) -> OpenAICompatibleProvider:
    """OpenAI provider; see ``create_preset_provider`` for the keyword arguments
    (``credential``, ``env``, ``http_client``, ``base_url``, ``timeout``...)."""
    return create_preset_provider(OPENAI_PACKAGE, api_key, **kwargs)
