"""Which providers ``--provider`` accepts and how the CLI builds them.

``mock`` is the built-in echo (prism.cli.echo). Real presets come from
``prism.providers.packages.PROVIDER_PRESETS`` when that module is installed;
their API key is read from the preset's documented environment variable. The
CLI is a host, so it may read ``os.environ``; key values are handed to the
provider and the redactor only, never printed.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prism.cli.echo import MOCK_DEFAULT_MODEL, create_echo_provider
from prism.cli.options import CliOptions, UsageProblem
from prism.contracts import ModelConfig
from prism.security import NOOP_REDACTOR

_log = logging.getLogger("prism.cli")


def _presets() -> Mapping[str, Any]:
    try:
        from prism.providers.packages import PROVIDER_PRESETS
    except ImportError:
        return {}
    return PROVIDER_PRESETS


# Any OpenAI-compatible server (LM Studio, Ollama, vLLM, llama.cpp): needs
# --base-url; a key only when --api-key-env names one (local servers take none).
LOCAL_PROVIDER = "openai-compatible"
LOCAL_DEFAULT_MODEL = "default"


def known_provider_names() -> tuple[str, ...]:
    presets = sorted(name for name in _presets() if name not in ("mock", LOCAL_PROVIDER))
    return ("mock", LOCAL_PROVIDER, *presets)


def model_for(provider: str, model: str) -> ModelConfig:
    """A ModelConfig for ``model``: the preset's listed metadata (limits,
    prices) when it has them, else just the names."""
    package = _presets().get(provider)
    if package is not None:
        config: ModelConfig = package.model_or_custom(model)
        return config
    return {"provider": provider, "model": model}


@dataclass(slots=True)
class ProviderSetup:
    provider: Any
    model: ModelConfig
    secrets: tuple[str, ...] = field(default_factory=tuple)


def create_cli_provider(
    options: CliOptions, environ: Mapping[str, str] | None = None
) -> ProviderSetup:
    if options.provider == "mock":
        model: ModelConfig = {"provider": "mock", "model": options.model or MOCK_DEFAULT_MODEL}
        return ProviderSetup(create_echo_provider(delay_ms=options.mock_delay_ms), model)
    env = os.environ if environ is None else environ
    with warnings.catch_warnings(record=True) as caught:
        # A placeholder key's "used but not redacted" warning becomes one
        # line of the CLI's own, not a Python warning with its source line.
        warnings.simplefilter("always", RuntimeWarning)
        setup = _real_provider(options, env)
    for warning in caught:
        sys.stderr.write(f"prism: warning: {' '.join(str(warning.message).split())}\n")
    _log.debug(
        "provider %s, model %s, %d key(s) to redact",
        options.provider,
        setup.model["model"],
        len(setup.secrets),
    )
    return setup


def _local_provider(options: CliOptions, env: Mapping[str, str]) -> ProviderSetup:
    from prism.cli.provider_config import configured_provider
    from prism.providers.openai_compatible import create_openai_compatible_provider
    from prism.security.redaction import redactable_credentials

    entry = configured_provider(LOCAL_PROVIDER, env) or {}
    base_url = options.base_url or entry.get("baseUrl")
    if base_url is None:
        raise UsageProblem(
            f"--provider {LOCAL_PROVIDER} needs --base-url URL (the server's /v1 endpoint,"
            " e.g. http://127.0.0.1:11434/v1 for Ollama)"
        )
    key_env = options.api_key_env or entry.get("apiKeyEnv")
    api_key = env.get(key_env) if key_env else None
    if key_env and not api_key:
        raise UsageProblem(f"--api-key-env {key_env} is not set in the environment")
    # No key: no Authorization header at all (the server needs none).
    # The adapter masks the key it sends itself; the agent's redactor
    # (built from the secrets returned here) covers everything else.
    provider = create_openai_compatible_provider(
        base_url=base_url, api_key=api_key or None, name=LOCAL_PROVIDER, redactor=NOOP_REDACTOR
    )
    model: ModelConfig = {
        "provider": LOCAL_PROVIDER,
        "model": options.model or entry.get("model") or LOCAL_DEFAULT_MODEL,
    }
    origin = f"provider {LOCAL_PROVIDER!r}"
    return ProviderSetup(provider, model, redactable_credentials((api_key,), origin=origin))


def _real_provider(options: CliOptions, env: Mapping[str, str]) -> ProviderSetup:
    if options.provider == LOCAL_PROVIDER:
        return _local_provider(options, env)
    package = _presets().get(options.provider)
    if package is None:  # build_options already checked; keep the error explicit
        raise UsageProblem(f"--provider {options.provider!r} is unknown")
    from prism.cli.provider_config import check_base_url, configured_provider
    from prism.providers.packages import create_preset_provider
    from prism.security.redaction import redactable_credentials

    # Precedence: flags (and --config) > the `prism providers add` entry >
    # OPENAI_BASE_URL for the openai preset (as the official SDK reads it) >
    # the preset's own values.
    entry = configured_provider(options.provider, env) or {}
    key_env = options.api_key_env or entry.get("apiKeyEnv")
    env_vars: tuple[str, ...] = (key_env,) if key_env else tuple(package.auth.env_vars)
    api_key = next((env[name] for name in env_vars if env.get(name)), None)
    if api_key is None and package.auth.required:
        raise UsageProblem(
            f"--provider {options.provider} needs an API key in the environment variable "
            + " or ".join(env_vars)
        )
    base_url = options.base_url or entry.get("baseUrl")
    if base_url is None and options.provider == "openai" and env.get("OPENAI_BASE_URL"):
        base_url = check_base_url(env["OPENAI_BASE_URL"], "OPENAI_BASE_URL")
    provider = create_preset_provider(package, api_key, base_url=base_url, redactor=NOOP_REDACTOR)
    wanted = options.model or entry.get("model")
    model = package.model_or_custom(wanted) if wanted else package.model(None)
    # A placeholder key too short to redact (local servers take "x") is used
    # but kept out of the agent's secrets; the provider already warned once.
    secrets = redactable_credentials((api_key,), origin=f"provider {provider.name!r}")
    return ProviderSetup(provider, model, secrets)
