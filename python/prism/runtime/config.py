"""The frozen agent configuration and the validation behind ``create_agent``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

import anyio

from prism.attention.calibration import TokenCalibration
from prism.compaction import CompactionOptions
from prism.contracts import ModelConfig
from prism.errors import ConfigError, UnknownNameError
from prism.middleware import MiddlewareRegistry
from prism.providers.registry import ProviderRegistry
from prism.retry import RetryOptions
from prism.runtime.checkpoint_state import CheckpointState, check_checkpoint_state
from prism.runtime.options import coerce_compaction_options, coerce_retry_options
from prism.security.redaction import SecretRedactor, create_redactor, normalize_secrets
from prism.stores.base import SessionStore
from prism.tools.definition import ToolDefinition
from prism.tools.registry import ToolRegistry, create_tool_registry

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from prism.assembly.assemble import InputBuilder, PromptBuilder
    from prism.assembly.context import ContextProvider
    from prism.assembly.skills import Skill
    from prism.attention.options import AttentionCompiler
    from prism.providers.base import AIProvider
    from prism.security.permissions import PermissionPolicy

__all__ = [
    "AgentConfig",
    "AgentOptions",
    "SleepFn",
    "registered_model",
    "validate_model",
    "validate_positive_int",
]

SleepFn = Callable[[float], Awaitable[None]]


class _RequiredAgentOptions(TypedDict):
    # A total base class, so ``__required_keys__`` is right at run time too
    # (string annotations hide ``Required[...]`` from the TypedDict machinery).
    model: Mapping[str, Any]
    provider: Any


class AgentOptions(_RequiredAgentOptions, total=False):
    """The parameters of ``create_agent`` (and ``AgentConfig.build``): the
    one list of them. ``model`` and ``provider`` are required; the others
    default as docs/runtime.md ("create_agent options") says: ``retry=True``,
    ``max_tool_rounds=8``, ``tool_concurrency=1``, ``durable=False``, and
    empty or ``None`` for the rest."""

    tools: Sequence[ToolDefinition] | ToolRegistry
    middleware: MiddlewareRegistry | None
    system: str | Sequence[Any] | None
    retry: Any
    compaction: Any
    max_tool_rounds: int
    tool_concurrency: int
    attention_compiler: Any
    secrets: Sequence[str]
    permission_policy: Any
    context_providers: Sequence[Any]
    skills: Sequence[Any]
    store: SessionStore | None
    sleep: SleepFn | None
    metadata: Mapping[str, Any] | None
    input_builder: InputBuilder | None
    prompt_builder: PromptBuilder | None
    providers: ProviderRegistry | None
    durable: bool
    persist_session_state: bool
    checkpoint_state: Sequence[CheckpointState]
    token_calibration: TokenCalibration | None


AGENT_OPTION_NAMES: frozenset[str] = frozenset(AgentOptions.__annotations__)


def _check_option_names(options: Mapping[str, Any]) -> None:
    # What Python itself says for a keyword-only signature: a TypeError.
    unknown = sorted(set(options) - AGENT_OPTION_NAMES)
    if unknown:
        raise TypeError(
            f"create_agent() got unexpected keyword argument(s) {unknown};"
            f" expected {sorted(AGENT_OPTION_NAMES)}"
        )
    missing = sorted(AgentOptions.__required_keys__ - set(options))
    if missing:
        raise TypeError(f"create_agent() missing required keyword argument(s) {missing}")


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
    provider: AIProvider
    tools: ToolRegistry
    middleware: MiddlewareRegistry | None
    system: tuple[Any, ...]
    retry: RetryOptions | None
    compaction: CompactionOptions | None
    max_tool_rounds: int
    tool_concurrency: int
    attention_compiler: AttentionCompiler | None
    secrets: tuple[str, ...]
    redactor: SecretRedactor
    permission_policy: PermissionPolicy | None
    context_providers: tuple[ContextProvider, ...]
    skills: tuple[Skill, ...]
    store: SessionStore | None
    sleep: SleepFn
    metadata: Mapping[str, Any]
    input_builder: InputBuilder | None = None
    prompt_builder: PromptBuilder | None = None
    providers: ProviderRegistry | None = None
    durable: bool = False
    persist_session_state: bool = False
    checkpoint_state: tuple[CheckpointState, ...] = ()
    token_calibration: TokenCalibration | None = None

    def provider_for(self, model: Mapping[str, Any]) -> AIProvider:
        """The provider a turn on ``model`` talks to: the registered provider
        named by ``model["provider"]`` when the agent has a registry holding
        it, else the agent's provider."""
        registry = self.providers
        if registry is None:
            return self.provider
        name = model.get("provider")
        if isinstance(name, str) and registry.has_provider(name):
            return registry.resolve_provider(name)
        return self.provider

    def check_provider(self, model: ModelConfig, where: str) -> None:
        """Refuse a model whose provider this agent cannot reach: a turn on it
        would otherwise silently talk to a different provider."""
        name = model["provider"]
        if name == self.model["provider"]:
            return
        if self.providers is None:
            raise ConfigError(
                f"{where} names provider {name!r} but the agent was created for"
                f" {self.model['provider']!r}; pass create_agent(providers=registry) with"
                f" {name!r} registered to switch providers"
            )
        if not self.providers.has_provider(name):
            raise UnknownNameError(
                f"{where} names provider {name!r}, which the agent's provider registry"
                f" does not hold; registered: {sorted(self.providers.list_providers())}"
            )

    @classmethod
    def build(cls, **options: Unpack[AgentOptions]) -> AgentConfig:
        """Validate ``options`` (the parameters of ``create_agent``, documented
        on :class:`AgentOptions`); ``ConfigError`` names the bad option."""
        _check_option_names(options)
        model: object = options["model"]
        provider: object = options["provider"]
        tools = options.get("tools", ())
        middleware = options.get("middleware")
        compaction = options.get("compaction")
        attention_compiler = options.get("attention_compiler")
        input_builder = options.get("input_builder")
        prompt_builder = options.get("prompt_builder")
        store = options.get("store")
        sleep = options.get("sleep")
        providers = options.get("providers")
        checked_model = validate_model(model)
        generate = getattr(provider, "generate", None)
        if provider is None or not callable(generate):
            raise ConfigError("provider must implement AIProvider (a generate(request) method)")
        registry = tools if isinstance(tools, ToolRegistry) else _tool_registry(tools)
        if middleware is not None and not isinstance(middleware, MiddlewareRegistry):
            raise ConfigError(
                "middleware must be a MiddlewareRegistry (create_middleware_registry())"
            )
        system_layers = _system_layers(options.get("system"))
        if store is not None and not isinstance(store, SessionStore):
            raise ConfigError("store must implement SessionStore (append, append_many, list, get)")
        if sleep is not None and not callable(sleep):
            raise ConfigError("sleep must be an async callable taking seconds")
        try:
            secret_values = normalize_secrets(options.get("secrets", ()))
        except TypeError as error:
            raise ConfigError(f"secrets: {error}") from None
        checked_compaction = coerce_compaction_options(compaction, checked_model)
        _check_builders(input_builder, prompt_builder, attention_compiler)
        if providers is not None and not isinstance(providers, ProviderRegistry):
            raise ConfigError("providers must be a ProviderRegistry (create_provider_registry())")
        return cls(
            model=checked_model,
            # Checked above: it has a callable ``generate``.
            provider=cast("AIProvider", provider),
            tools=registry,
            middleware=middleware,
            system=system_layers,
            retry=coerce_retry_options(options.get("retry", True)),
            compaction=checked_compaction,
            max_tool_rounds=validate_positive_int(
                options.get("max_tool_rounds", 8), "max_tool_rounds", minimum=0
            ),
            tool_concurrency=validate_positive_int(
                options.get("tool_concurrency", 1), "tool_concurrency"
            ),
            attention_compiler=_check_attention(
                attention_compiler, checked_model, checked_compaction
            ),
            secrets=secret_values,
            redactor=create_redactor(secret_values),
            permission_policy=options.get("permission_policy"),
            context_providers=tuple(options.get("context_providers", ())),
            skills=tuple(options.get("skills", ())),
            store=store,
            sleep=sleep or anyio.sleep,
            metadata=dict(options.get("metadata") or {}),
            input_builder=input_builder,
            prompt_builder=prompt_builder,
            providers=providers,
            durable=_check_bool(options.get("durable", False), "durable"),
            persist_session_state=_check_bool(
                options.get("persist_session_state", False), "persist_session_state"
            ),
            checkpoint_state=check_checkpoint_state(options.get("checkpoint_state", ())),
            token_calibration=_check_calibration(options.get("token_calibration")),
        )


def _check_calibration(value: object) -> TokenCalibration | None:
    if value is not None and not isinstance(value, TokenCalibration):
        raise ConfigError(
            "token_calibration must be a prism.attention.TokenCalibration, got "
            f"{type(value).__name__}"
        )
    return value


def _check_builders(input_builder: object, prompt_builder: object, attention: object) -> None:
    _check_builder(input_builder, "input_builder")
    _check_builder(prompt_builder, "prompt_builder")
    if input_builder is not None and attention not in (None, False):
        raise ConfigError(
            "input_builder cannot be combined with attention_compiler: the compiler"
            " works on the default message groups (drop one of them)"
        )


def _system_layers(system: object) -> tuple[Any, ...]:
    if system is None:
        return ()
    if isinstance(system, str):
        return (system,) if system else ()
    if isinstance(system, Sequence) and not isinstance(system, bytes):
        # Strings, {label, text} dicts or SystemPromptLayer objects (prism.assembly).
        return tuple(system)
    raise ConfigError("system must be a string or a list of system prompt layers")


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be a bool, got {value!r}")
    return value


def _check_builder(builder: object, name: str) -> None:
    if builder is not None and not callable(getattr(builder, "build", None)):
        raise ConfigError(f"{name} must have an async build(...) method (see docs/assembly.md)")


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


def registered_model(registry: Any, provider: str, model_id: str) -> ModelConfig:
    """The registry's config for ``provider``/``model_id`` when it lists one
    (limits, prices), else just the names."""
    if registry is not None:
        for config in registry.list_models(provider):
            if config["model"] == model_id:
                return config  # type: ignore[no-any-return]
    return {"provider": provider, "model": model_id}
