"""An explicit provider/model registry: the host registers what it owns, nothing
is discovered. Unknown names raise :class:`~prism.errors.UnknownNameError`."""

from __future__ import annotations

import copy
from typing import Any

from prism.contracts import ModelConfig
from prism.errors import ConfigError, UnknownNameError
from prism.providers.base import AIProvider


class ProviderRegistry:
    def __init__(self) -> None:
        self._providers: dict[str, AIProvider] = {}
        self._models: dict[tuple[str, str], ModelConfig] = {}

    def register_provider(self, provider: AIProvider, name: str | None = None) -> str:
        """Register under ``name`` (default ``provider.name``); returns the name used."""
        if not callable(getattr(provider, "generate", None)):
            raise ConfigError("provider must have a generate(request) method")
        key = name if name is not None else getattr(provider, "name", None)
        if not isinstance(key, str) or not key:
            raise ConfigError("provider needs a non-empty string name")
        if key in self._providers:
            raise ConfigError(f"provider {key!r} is already registered")
        self._providers[key] = provider
        return key

    def register_model(self, model: ModelConfig) -> None:
        _check_model(model)
        key = (model["provider"], model["model"])
        if key in self._models:
            raise ConfigError(f"model {key[1]!r} of provider {key[0]!r} is already registered")
        self._models[key] = copy.deepcopy(model)

    def resolve_provider(self, name: str) -> AIProvider:
        try:
            return self._providers[name]
        except (KeyError, TypeError):
            raise UnknownNameError(
                f"unknown provider {name!r}; registered: {sorted(self._providers)}"
            ) from None

    def resolve_model(self, provider: str, model: str) -> ModelConfig:
        """A copy of the registered config, so callers cannot edit the registry."""
        try:
            return copy.deepcopy(self._models[(provider, model)])
        except (KeyError, TypeError):
            known = sorted(m for p, m in self._models if p == provider)
            raise UnknownNameError(
                f"unknown model {model!r} for provider {provider!r}; registered: {known}"
            ) from None

    def has_provider(self, name: str) -> bool:
        return name in self._providers

    def list_providers(self) -> list[str]:
        return list(self._providers)

    def list_models(self, provider: str | None = None) -> list[ModelConfig]:
        return [
            copy.deepcopy(config)
            for (owner, _), config in self._models.items()
            if provider is None or owner == provider
        ]


def create_provider_registry() -> ProviderRegistry:
    return ProviderRegistry()


def _check_model(model: Any) -> None:
    if not isinstance(model, dict):
        raise ConfigError(f"model config must be a dict, got {type(model).__name__}")
    for key in ("provider", "model"):
        value = model.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"model config needs a non-empty string {key!r}")
    limits = model.get("limits")
    if limits is not None:
        if not isinstance(limits, dict):
            raise ConfigError("model config 'limits' must be a dict")
        for key, value in limits.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"model limit {key!r} must be a positive int, got {value!r}")
