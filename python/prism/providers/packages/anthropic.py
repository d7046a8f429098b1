"""Anthropic (api.anthropic.com) package: model metadata and prices for the
native Messages adapter (:mod:`prism.providers.anthropic`).

Prices are USD per million tokens (snapshots; check the vendor's page):
cache writes bill 1.25x input (5-minute TTL), cache reads 0.1x.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prism.contracts import JsonValue, ModelConfig
from prism.errors import UnknownNameError
from prism.providers.anthropic import (
    AnthropicProvider,
    AnthropicRequestPolicy,
    create_anthropic_provider,
)
from prism.providers.packages.base import credential_chain, model_config
from prism.security.credentials import CredentialSource

if TYPE_CHECKING:
    import httpx

    from prism.security.redaction import SecretRedactor

NAME = "anthropic"
ENV_VARS = ("ANTHROPIC_API_KEY",)
BASE_URL = "https://api.anthropic.com"


def _m(model: str, out: int, inp: float, outp: float) -> ModelConfig:
    return model_config(
        NAME, model, context_window=200_000, max_output_tokens=out, input=inp, output=outp,
        cache_read=round(inp * 0.1, 4), cache_write=round(inp * 1.25, 4),
    )  # fmt: skip


ANTHROPIC_MODELS: tuple[ModelConfig, ...] = (
    _m("claude-opus-4-5", 64_000, 5.0, 25.0),
    _m("claude-opus-4-1", 32_000, 15.0, 75.0),
    _m("claude-sonnet-4-5", 64_000, 3.0, 15.0),
    _m("claude-sonnet-4", 64_000, 3.0, 15.0),
    _m("claude-haiku-4-5", 64_000, 1.0, 5.0),
)
DEFAULT_MODEL = "claude-sonnet-4-5"


def anthropic_model(name: str | None = None, *, custom: bool = False) -> ModelConfig:
    """Listed metadata for ``name`` (the default model when ``None``); an
    unlisted name raises ``UnknownNameError`` unless ``custom`` (then a bare config)."""
    wanted = name or DEFAULT_MODEL
    for model in ANTHROPIC_MODELS:
        if model["model"] == wanted:
            return model
    if custom:
        return {"provider": NAME, "model": wanted}
    raise UnknownNameError(
        f"unknown model {wanted!r} for provider {NAME!r}; known: "
        + ", ".join(m["model"] for m in ANTHROPIC_MODELS)
    )


def create_anthropic_package_provider(
    api_key: str | None = None,
    *,
    credential: CredentialSource | None = None,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    timeout: httpx.Timeout | float | None = None,
    request_policy: AnthropicRequestPolicy | None = None,
    default_options: Mapping[str, JsonValue] | None = None,
    redactor: SecretRedactor,
    **kwargs: Any,
) -> AnthropicProvider:
    """The Anthropic provider with this package's models. The credential is
    looked up as in the other presets: ``api_key``, ``credential``, then
    ``env`` (a mapping the host passes) under ``ANTHROPIC_API_KEY``."""
    chain = credential_chain(NAME, None, credential, env, ENV_VARS, required=api_key is None)
    return create_anthropic_provider(
        api_key=api_key,
        credential=(chain or None) if api_key is None else None,
        base_url=base_url or BASE_URL,
        http_client=http_client,
        timeout=timeout,
        request_policy=request_policy,
        default_options=default_options,
        redactor=redactor,
        models=ANTHROPIC_MODELS,
        **kwargs,
    )
