"""What a provider package is: data (URL, auth descriptor, models, policies)
on top of the one OpenAI-compatible adapter. No discovery, no globals: a host
imports the preset it uses, or looks it up in ``PROVIDER_PRESETS`` by name."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from prism.contracts import JsonValue, ModelConfig, ModelPricing, Usage
from prism.errors import ConfigError, UnknownNameError
from prism.providers.openai_compatible import (
    CachePolicy,
    OpenAICompatibleProvider,
    RequestPolicy,
)
from prism.security.credentials import CredentialResolver, CredentialSource, env_credential
from prism.security.redaction import SecretRedactor

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True, slots=True)
class AuthDescriptor:
    """How a preset authenticates. ``env_vars`` are the names a *host* may read
    from its environment and pass in (``env=os.environ``); Prism never reads
    the process environment on its own."""

    env_vars: tuple[str, ...]
    header: str = "Authorization"
    scheme: str | None = "Bearer"
    key_url: str = ""
    required: bool = True


@dataclass(frozen=True, slots=True)
class ProviderPackage:
    """A named preset: everything needed to build a provider except the secret."""

    name: str
    title: str
    base_url: str
    auth: AuthDescriptor
    models: tuple[ModelConfig, ...]
    default_model: str
    request_policy: RequestPolicy = field(default_factory=RequestPolicy)
    cache_policy: CachePolicy = field(default_factory=CachePolicy)
    headers: Mapping[str, str] = field(default_factory=dict)
    illustrative: bool = True
    """Model limits and prices are snapshots for budgeting, not live data:
    check the vendor's pricing page before relying on them."""

    def __post_init__(self) -> None:
        names = [m["model"] for m in self.models]
        if self.default_model not in names:
            raise ConfigError(f"{self.name}: default_model {self.default_model!r} is not listed")
        for model in self.models:
            if model["provider"] != self.name:
                raise ConfigError(f"{self.name}: model {model['model']!r} names another provider")

    def model(self, name: str | None = None) -> ModelConfig:
        """The ModelConfig for ``name`` (the default model when ``None``)."""
        wanted = name or self.default_model
        for model in self.models:
            if model["model"] == wanted:
                return model
        raise UnknownNameError(
            f"unknown model {wanted!r} for provider {self.name!r}; known: "
            + ", ".join(m["model"] for m in self.models)
        )

    def model_or_custom(self, name: str) -> ModelConfig:
        """Listed metadata when known, else a bare config: presets list popular
        models, not every model the API serves."""
        for model in self.models:
            if model["model"] == name:
                return model
        return {"provider": self.name, "model": name}

    def create(self, **kwargs: Any) -> OpenAICompatibleProvider:
        return create_preset_provider(self, **kwargs)


def model_config(
    provider: str,
    model: str,
    *,
    context_window: int,
    max_output_tokens: int,
    input: float,
    output: float,
    cache_read: float | None = None,
    cache_write: float | None = None,
    options: Mapping[str, JsonValue] | None = None,
) -> ModelConfig:
    pricing: ModelPricing = {"input": input, "output": output}
    if cache_read is not None:
        pricing["cacheRead"] = cache_read
    if cache_write is not None:
        pricing["cacheWrite"] = cache_write
    config: ModelConfig = {
        "provider": provider,
        "model": model,
        "limits": {"contextWindow": context_window, "maxOutputTokens": max_output_tokens},
        "pricing": pricing,
    }
    if options:
        config["options"] = dict(options)
    return config


ModelRow = (
    tuple[str, int, int, float, float, float] | tuple[str, int, int, float, float, float, float]
)
"""(model, context window, max output tokens, then USD per million tokens:
input, output, cache read[, cache write])."""


def model_table(provider: str, *rows: ModelRow) -> tuple[ModelConfig, ...]:
    """A preset's model list from compact rows (see :data:`ModelRow`)."""
    return tuple(
        model_config(
            provider,
            row[0],
            context_window=row[1],
            max_output_tokens=row[2],
            input=row[3],
            output=row[4],
            cache_read=row[5],
            cache_write=row[6] if len(row) > 6 else None,
        )
        for row in rows
    )


def credential_chain(
    name: str,
    api_key: str | None,
    credential: CredentialSource | None,
    env: Mapping[str, str] | None,
    env_vars: Sequence[str],
    required: bool = True,
) -> list[str | CredentialResolver]:
    """Where a preset looks for its key, in order: ``api_key``, ``credential``,
    then ``env`` (a mapping the host passes) under ``env_vars``. Empty only
    when the preset needs no key; else ConfigError says what to pass."""
    chain: list[str | CredentialResolver] = []
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key:
            raise ConfigError(f"{name}: api_key must be a non-empty string")
        chain.append(api_key)
    if credential is not None:
        if isinstance(credential, str | CredentialResolver):
            chain.append(credential)
        else:
            chain.extend(c for c in credential if c is not None)
    if env is not None and env_vars:
        chain.append(env_credential(env, *env_vars))
    if not chain and required:
        raise ConfigError(
            f"{name} needs a credential: pass api_key=..., credential=..., or "
            f"env=<mapping> holding {' or '.join(env_vars)}"
        )
    return chain


def create_preset_provider(
    package: ProviderPackage,
    api_key: str | None = None,
    *,
    credential: CredentialSource | None = None,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float | None = None,
    name: str | None = None,
    request_policy: RequestPolicy | None = None,
    cache_policy: CachePolicy | None = None,
    default_options: Mapping[str, JsonValue] | None = None,
    redactor: SecretRedactor,
    clock: Callable[[], float] | None = None,
) -> OpenAICompatibleProvider:
    """Build ``package``'s provider. The credential is looked up in this order:
    ``api_key``, ``credential``, then ``env`` (a mapping the host passes, e.g.
    ``os.environ``) under the package's ``auth.env_vars``. ``redactor`` is
    the agent's (required; see ``create_openai_compatible_provider``)."""
    chain = credential_chain(
        package.name, api_key, credential, env, package.auth.env_vars, package.auth.required
    )
    merged_headers = {**package.headers, **(headers or {})}
    return OpenAICompatibleProvider(
        base_url=base_url or package.base_url,
        path="/chat/completions",
        credential=chain or None,
        http_client=http_client,
        headers=merged_headers,
        timeout=timeout,
        name=name or package.name,
        request_policy=request_policy or package.request_policy,
        cache_policy=cache_policy or package.cache_policy,
        default_options=default_options,
        redactor=redactor,
        # A known key is redacted from the start (and validated now).
        credential_secrets=(api_key,) if api_key is not None else (),
        auth_header=package.auth.header,
        auth_scheme=package.auth.scheme,
        models=package.models
        if name is None
        else tuple({**m, "provider": name} for m in package.models),
        clock=clock or time.time,
    )


def with_overrides(package: ProviderPackage, **changes: Any) -> ProviderPackage:
    """A copy of ``package`` with fields replaced (e.g. a self-hosted base_url)."""
    return replace(package, **changes)


def estimate_cost(usage: Usage, pricing: ModelPricing) -> float:
    """USD for one turn. ``inputTokens`` includes cached tokens (see
    ``map_usage``), so cache reads/writes are billed at their own price and
    only the rest at the input price."""
    cached = usage.get("cacheReadTokens", 0)
    written = usage.get("cacheWriteTokens", 0)
    fresh = max(0, usage.get("inputTokens", 0) - cached - written)
    input_price = pricing.get("input", 0.0)
    total = fresh * input_price
    total += cached * pricing.get("cacheRead", input_price)
    total += written * pricing.get("cacheWrite", input_price)
    total += usage.get("outputTokens", 0) * pricing.get("output", 0.0)
    return total / 1_000_000
