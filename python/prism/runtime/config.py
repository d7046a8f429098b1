"""The frozen agent configuration and the validation behind ``create_agent``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from prism.compaction import CompactionOptions
from prism.contracts import ModelConfig
from prism.errors import ConfigError
from prism.middleware import MiddlewareRegistry
from prism.retry import RetryOptions
from prism.runtime.options import coerce_compaction_options, coerce_retry_options
from prism.security.redaction import SecretRedactor, create_redactor, normalize_secrets
from prism.stores.base import SessionStore
from prism.tools.definition import ToolDefinition
from prism.tools.registry import ToolRegistry, create_tool_registry

__all__ = ["AgentConfig", "SleepFn", "validate_model", "validate_positive_int"]

SleepFn = Callable[[float], Awaitable[None]]


def validate_model(model: object, where: str = "model") -> ModelConfig:
    if not isinstance(model, Mapping):
        raise ConfigError(f"{where} must be a dict like {{'provider': ..., 'model': ...}}")
    for key in ("provider", "model"):
        value = model.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where}.{key} must be a non-empty string")
    return dict(model)  # type: ignore[return-value]


def validate_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Everything an :class:`~prism.runtime.Agent` was created with, validated.

    ``retry``/``compaction`` keep the caller's option objects (``None`` when
    off); ``redactor`` is built once from ``secrets`` and applied to events,
    stored entries and error messages.
    """

    model: ModelConfig
    provider: Any
    tools: ToolRegistry
    middleware: MiddlewareRegistry | None
    system: tuple[Any, ...]
    retry: RetryOptions | None
    compaction: CompactionOptions | None
    max_tool_rounds: int
    tool_concurrency: int
    attention_compiler: Any
    secrets: tuple[str, ...]
    redactor: SecretRedactor
    permission_policy: Any
    context_providers: tuple[Any, ...]
    skills: tuple[Any, ...]
    store: SessionStore | None
    sleep: SleepFn
    metadata: Mapping[str, Any]

    @classmethod
    def build(
        cls,
        *,
        model: object,
        provider: object,
        tools: Sequence[ToolDefinition] | ToolRegistry = (),
        middleware: MiddlewareRegistry | None = None,
        system: str | Sequence[Any] | None = None,
        retry: Any = None,
        compaction: Any = None,
        max_tool_rounds: int = 8,
        tool_concurrency: int = 1,
        attention_compiler: Any = None,
        secrets: Sequence[str] = (),
        permission_policy: Any = None,
        context_providers: Sequence[Any] = (),
        skills: Sequence[Any] = (),
        store: SessionStore | None = None,
        sleep: SleepFn | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AgentConfig:
        checked_model = validate_model(model)
        generate = getattr(provider, "generate", None)
        if provider is None or not callable(generate):
            raise ConfigError("provider must implement AIProvider (a generate(request) method)")
        registry = tools if isinstance(tools, ToolRegistry) else _tool_registry(tools)
        if middleware is not None and not isinstance(middleware, MiddlewareRegistry):
            raise ConfigError(
                "middleware must be a MiddlewareRegistry (create_middleware_registry())"
            )
        if system is None:
            system_layers: tuple[str, ...] = ()
        elif isinstance(system, str):
            system_layers = (system,) if system else ()
        elif isinstance(system, Sequence) and not isinstance(system, bytes):
            # Strings, {label, text} dicts or SystemPromptLayer objects (prism.assembly).
            system_layers = tuple(system)
        else:
            raise ConfigError("system must be a string or a list of system prompt layers")
        if store is not None and not isinstance(store, SessionStore):
            raise ConfigError("store must implement SessionStore (append, append_many, list, get)")
        if sleep is not None and not callable(sleep):
            raise ConfigError("sleep must be an async callable taking seconds")
        try:
            secret_values = normalize_secrets(secrets)
        except TypeError as error:
            raise ConfigError(f"secrets: {error}") from None
        checked_compaction = coerce_compaction_options(compaction, checked_model)
        return cls(
            model=checked_model,
            provider=provider,
            tools=registry,
            middleware=middleware,
            system=system_layers,
            retry=coerce_retry_options(retry),
            compaction=checked_compaction,
            max_tool_rounds=validate_positive_int(max_tool_rounds, "max_tool_rounds", minimum=0),
            tool_concurrency=validate_positive_int(tool_concurrency, "tool_concurrency"),
            attention_compiler=_check_attention(
                attention_compiler, checked_model, checked_compaction
            ),
            secrets=secret_values,
            redactor=create_redactor(secret_values),
            permission_policy=permission_policy,
            context_providers=tuple(context_providers),
            skills=tuple(skills),
            store=store,
            sleep=sleep or anyio.sleep,
            metadata=dict(metadata or {}),
        )


def _tool_registry(tools: object) -> ToolRegistry:
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise ConfigError("tools must be a list of ToolDefinition or a ToolRegistry")
    return create_tool_registry(tools)


def _check_attention(value: Any, model: ModelConfig, compaction: Any) -> Any:
    """``None``/``False``: off. ``True``, options or their camelCase dict: a frozen
    ``AttentionCompiler`` whose input cap is resolved now (failing closed), with
    the compaction trigger cross-checked against it."""
    if value is None or value is False:
        return None
    from prism.attention import create_attention_compiler

    trigger = getattr(compaction, "effective_trigger", None) if compaction is not None else None
    return create_attention_compiler(
        None if value is True else value, model=model, compaction_trigger=trigger
    )
