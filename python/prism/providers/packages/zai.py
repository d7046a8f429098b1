"""Z.ai (GLM) preset. GLM streams reasoning as ``reasoning_content`` and
accepts it back on assistant messages, so ``thinking`` blocks are sent there."""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import OpenAICompatibleProvider, RequestPolicy
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "zai"

ZAI_PACKAGE = ProviderPackage(
    name=NAME,
    title="Z.ai",
    base_url="https://api.z.ai/api/paas/v4",
    auth=AuthDescriptor(
        env_vars=("ZAI_API_KEY",), key_url="https://z.ai/manage-apikey/apikey-list"
    ),
    models=model_table(
        NAME,
        ("glm-4.6", 200_000, 128_000, 0.6, 2.2, 0.11),
        ("glm-4.5", 131_072, 98_304, 0.6, 2.2, 0.11),
        ("glm-4.5-air", 131_072, 98_304, 0.2, 1.1, 0.03),
    ),
    default_model="glm-4.6",
    request_policy=RequestPolicy(thinking="reasoning_content"),
)


def create_zai_provider(api_key: str | None = None, **kwargs: Any) -> OpenAICompatibleProvider:
    """Z.ai provider; keyword arguments as ``create_preset_provider``."""
    return create_preset_provider(ZAI_PACKAGE, api_key, **kwargs)
