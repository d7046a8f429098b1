"""OpenRouter preset: one key, many upstream models (``vendor/model`` names).

OpenRouter caches automatically where the upstream supports it and reports
cache reads in ``prompt_tokens_details.cached_tokens``. Reasoning arrives as
``delta.reasoning``; history ``thinking`` blocks are omitted on purpose since
upstreams differ in whether they accept them back.
"""

from __future__ import annotations

from typing import Any

from prism.providers.openai_compatible import OpenAICompatibleProvider, RequestPolicy
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    model_table,
)

NAME = "openrouter"

OPENROUTER_PACKAGE = ProviderPackage(
    name=NAME,
    title="OpenRouter",
    base_url="https://openrouter.ai/api/v1",
    auth=AuthDescriptor(env_vars=("OPENROUTER_API_KEY",), key_url="https://openrouter.ai/keys"),
    models=model_table(
        NAME,
        ("anthropic/claude-sonnet-4", 200_000, 64_000, 3.0, 15.0, 0.3, 3.75),
        ("openai/gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1),
        ("google/gemini-2.5-flash", 1_048_576, 65_535, 0.3, 2.5, 0.075),
    ),
    default_model="openai/gpt-4.1-mini",
    request_policy=RequestPolicy(thinking="omit"),
)


def create_openrouter_provider(
    api_key: str | None = None,
    *,
    app_url: str | None = None,
    app_name: str | None = None,
    **kwargs: Any,
) -> OpenAICompatibleProvider:
    """OpenRouter provider. ``app_url``/``app_name`` become the optional
    ``HTTP-Referer``/``X-Title`` attribution headers."""
    headers = dict(kwargs.pop("headers", None) or {})
    if app_url:
        headers.setdefault("HTTP-Referer", app_url)
    if app_name:
        headers.setdefault("X-Title", app_name)
    return create_preset_provider(OPENROUTER_PACKAGE, api_key, headers=headers, **kwargs)
