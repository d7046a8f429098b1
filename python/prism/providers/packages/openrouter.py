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
    model_config,
)

NAME = "openrouter"

OPENROUTER_PACKAGE = ProviderPackage(
    name=NAME,
    title="OpenRouter",
    base_url="https://openrouter.ai/api/v1",
    auth=AuthDescriptor(env_vars=("OPENROUTER_API_KEY",), key_url="https://openrouter.ai/keys"),
    models=(
        model_config(
            NAME,
            "anthropic/claude-sonnet-4",
            context_window=200_000,
            max_output_tokens=64_000,
            input=3.0,
            output=15.0,
            cache_read=0.3,
            cache_write=3.75,
        ),
        model_config(
            NAME,
            "openai/gpt-4.1-mini",
            context_window=1_047_576,
            max_output_tokens=32_768,
            input=0.4,
            output=1.6,
            cache_read=0.1,
        ),
        model_config(
            NAME,
            "google/gemini-2.5-flash",
            context_window=1_048_576,
            max_output_tokens=65_535,
            input=0.3,
            output=2.5,
            cache_read=0.075,
        ),
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
