"""Provider presets on top of the OpenAI-compatible adapter.

Each preset is a :class:`ProviderPackage` (base URL, auth descriptor, model
metadata, request/cache policies) plus a ``create_<preset>_provider``
function. ``PROVIDER_PRESETS`` maps the names the CLI's ``--provider``
accepts to packages; nothing is discovered or registered implicitly.
"""

from __future__ import annotations

from types import MappingProxyType

from prism.errors import UnknownNameError
from prism.providers.packages.anthropic import (
    ANTHROPIC_MODELS,
    anthropic_model,
    create_anthropic_package_provider,
)
from prism.providers.packages.base import (
    AuthDescriptor,
    ProviderPackage,
    create_preset_provider,
    estimate_cost,
    model_config,
    with_overrides,
)
from prism.providers.packages.kimi import KIMI_PACKAGE, create_kimi_provider
from prism.providers.packages.neuralwatt import NEURALWATT_PACKAGE, create_neuralwatt_provider
from prism.providers.packages.openai import OPENAI_PACKAGE, create_openai_provider
from prism.providers.packages.opencode_go import OPENCODE_GO_PACKAGE, create_opencode_go_provider
from prism.providers.packages.openrouter import OPENROUTER_PACKAGE, create_openrouter_provider
from prism.providers.packages.zai import ZAI_PACKAGE, create_zai_provider

PROVIDER_PRESETS: MappingProxyType[str, ProviderPackage] = MappingProxyType(
    {
        p.name: p
        for p in (
            OPENAI_PACKAGE,
            OPENROUTER_PACKAGE,
            ZAI_PACKAGE,
            KIMI_PACKAGE,
            OPENCODE_GO_PACKAGE,
            NEURALWATT_PACKAGE,
        )
    }
)


def get_provider_preset(name: str) -> ProviderPackage:
    """The preset called ``name``; UnknownNameError lists the known ones."""
    try:
        return PROVIDER_PRESETS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown provider preset {name!r}; known: {', '.join(sorted(PROVIDER_PRESETS))}"
        ) from None


__all__ = [
    "ANTHROPIC_MODELS",
    "KIMI_PACKAGE",
    "NEURALWATT_PACKAGE",
    "OPENAI_PACKAGE",
    "OPENCODE_GO_PACKAGE",
    "OPENROUTER_PACKAGE",
    "PROVIDER_PRESETS",
    "ZAI_PACKAGE",
    "AuthDescriptor",
    "ProviderPackage",
    "anthropic_model",
    "create_anthropic_package_provider",
    "create_kimi_provider",
    "create_neuralwatt_provider",
    "create_openai_provider",
    "create_opencode_go_provider",
    "create_openrouter_provider",
    "create_preset_provider",
    "create_zai_provider",
    "estimate_cost",
    "get_provider_preset",
    "model_config",
    "with_overrides",
]
