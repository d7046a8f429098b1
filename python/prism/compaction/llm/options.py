"""Options of the LLM compaction strategy, validated when they are built.

``LlmCompactionOptions`` holds every option of the reference in snake_case.
``from_json`` reads the camelCase form a config file uses; providers,
credentials and request policies are objects and cannot come from JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from prism._json_fields import NOT_JSON
from prism._options import coerce_options, options_from_mapping
from prism.compaction.llm.prepare import DEFAULT_KEEP_RECENT_TOKENS, check_token_budget
from prism.compaction.llm.prompts import DEFAULT_PROMPTS, CompactionPrompts
from prism.compaction.llm.serialize import (
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    check_max_tool_result_chars,
)
from prism.contracts import ModelConfig, ProviderRequest
from prism.errors import ConfigError

LLM_COMPACTION_STRATEGY_NAME = "llm-compaction"
DEFAULT_RESERVE_TOKENS = 16_384
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")

ProviderFactory: TypeAlias = Callable[[str], Any]
"""Receives the resolved credential value; returns an ``AIProvider`` (or an awaitable of one)."""

ProviderRequestPolicy: TypeAlias = Callable[
    [ProviderRequest], "ProviderRequest | Awaitable[ProviderRequest]"
]
"""Takes the summary request, returns the request to send (sync or async)."""


def _check_model(value: object, name: str) -> ModelConfig:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"llm compaction option {name} must be a model config like "
            "{'provider': ..., 'model': ...}"
        )
    for key in ("provider", "model"):
        item = value.get(key)
        if not isinstance(item, str) or not item:
            raise ConfigError(f"llm compaction option {name}.{key} must be a non-empty string")
    return dict(value)  # type: ignore[return-value]


def _one_of(a: Any, b: Any, names: str) -> Any:
    if a is not None and b is not None and a is not b and a != b:
        raise ConfigError(f"llm compaction options {names} are aliases; give one of them")
    return a if a is not None else b


def _check_provider(provider: Any, credential: Any) -> None:
    """An AIProvider without a credential, or a factory with one."""
    if provider is None:
        raise ConfigError(
            "llm compaction needs provider= (an AIProvider, or a factory that receives "
            "the resolved credential)"
        )
    is_factory = not callable(getattr(provider, "generate", None))
    if is_factory and not callable(provider):
        raise ConfigError(
            "llm compaction option provider must be an AIProvider (with generate(request)) "
            f"or a callable factory, got {type(provider).__name__}"
        )
    if is_factory and credential is None:
        raise ConfigError(
            "llm compaction: a provider factory needs credential= (the factory receives "
            "the resolved credential)"
        )
    if not is_factory and credential is not None:
        raise ConfigError(
            "llm compaction option credential is only used with a provider factory; "
            "pass provider=<factory> or drop credential"
        )


def _check_credential_request(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(
        isinstance(value.get(k, ""), str) for k in ("provider", "name")
    ):
        raise ConfigError(
            "llm compaction option credential_request must be an object like "
            "{'provider': 'example', 'name': 'apiKey'}"
        )
    return dict(value)


def _check_policies(policies: object) -> tuple[ProviderRequestPolicy, ...]:
    if isinstance(policies, str | bytes) or not isinstance(policies, Sequence):
        raise ConfigError("llm compaction option provider_request_policies must be a list")
    for index, policy in enumerate(policies):
        if not callable(policy) and not callable(getattr(policy, "apply", None)):
            raise ConfigError(
                f"llm compaction provider_request_policies[{index}] must be callable "
                "(request -> request) or have apply(request)"
            )
    return tuple(policies)


@dataclass(frozen=True, slots=True)
class LlmCompactionOptions:
    """See ``create_llm_compaction_strategy`` (docs/compaction.md) for each field.

    ``provider``/``summary_provider``, ``model``/``summary_model`` and
    ``max_summary_tokens``/``max_output_tokens`` are aliases; after
    construction the first name of each pair holds the value.
    """

    provider: Any = field(default=None, metadata=NOT_JSON)
    model: ModelConfig | None = None
    summary_provider: Any = field(default=None, metadata=NOT_JSON)
    summary_model: ModelConfig | None = None
    credential: Any = field(default=None, repr=False, metadata=NOT_JSON)
    credential_request: Mapping[str, Any] | None = None
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    provider_request_policies: Sequence[ProviderRequestPolicy] = field(
        default=(), metadata=NOT_JSON
    )
    custom_instructions: str | None = None
    thinking_level: str | None = None
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    max_summary_tokens: int | None = None
    max_output_tokens: int | None = None
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
    track_file_operations: bool = True
    include_file_operations: bool = True
    prompts: CompactionPrompts = field(default=DEFAULT_PROMPTS, metadata=NOT_JSON)
    retry: Any = field(default=None, metadata=NOT_JSON)
    name: str = field(default=LLM_COMPACTION_STRATEGY_NAME, metadata=NOT_JSON)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        provider = _one_of(self.provider, self.summary_provider, "provider/summary_provider")
        _check_provider(provider, self.credential)
        set_(self, "provider", provider)
        set_(self, "summary_provider", provider)
        model = _one_of(self.model, self.summary_model, "model/summary_model")
        if model is None:
            raise ConfigError("llm compaction needs model= (the summary model config)")
        model = _check_model(model, "model")
        set_(self, "model", model)
        set_(self, "summary_model", model)
        if self.credential is not None:
            from prism.security.credentials import as_credential_resolver

            try:
                set_(self, "credential", as_credential_resolver(self.credential))
            except TypeError as error:
                raise ConfigError(f"llm compaction option credential: {error}") from None
        if self.credential_request is not None:
            set_(self, "credential_request", _check_credential_request(self.credential_request))
        if not isinstance(self.provider_options, Mapping):
            raise ConfigError("llm compaction option provider_options must be an object")
        set_(self, "provider_options", dict(self.provider_options))
        set_(self, "provider_request_policies", _check_policies(self.provider_request_policies))
        if self.custom_instructions is not None and not isinstance(self.custom_instructions, str):
            raise ConfigError("llm compaction option custom_instructions must be a string")
        if self.thinking_level is not None and self.thinking_level not in THINKING_LEVELS:
            raise ConfigError(
                f"llm compaction option thinking_level must be one of {', '.join(THINKING_LEVELS)}"
                f", got {self.thinking_level!r}"
            )
        check_token_budget("reserve_tokens", self.reserve_tokens)
        check_token_budget("keep_recent_tokens", self.keep_recent_tokens)
        maximum = _one_of(
            self.max_summary_tokens, self.max_output_tokens, "max_summary_tokens/max_output_tokens"
        )
        if maximum is not None:
            check_token_budget("max_summary_tokens", maximum)
        set_(self, "max_summary_tokens", maximum)
        set_(self, "max_output_tokens", maximum)
        check_max_tool_result_chars(self.max_tool_result_chars)
        for flag in ("track_file_operations", "include_file_operations"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"llm compaction option {flag} must be true or false")
        if not isinstance(self.prompts, CompactionPrompts):
            raise ConfigError("llm compaction option prompts must be a CompactionPrompts")
        set_(self, "retry", _check_retry(self.retry))
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError("llm compaction option name must be a non-empty string")

    @property
    def is_provider_factory(self) -> bool:
        return not callable(getattr(self.provider, "generate", None))

    @property
    def summary_token_budget(self) -> int:
        """The summary's output budget: ``max_summary_tokens``, else 80% of
        ``reserve_tokens`` (the rest of the reserve is headroom)."""
        if self.max_summary_tokens is not None:
            return self.max_summary_tokens
        return max(1, (self.reserve_tokens * 4) // 5)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], **objects: Any) -> LlmCompactionOptions:
        """From a config file's camelCase object; ``objects`` supplies what
        JSON cannot hold (``provider=``, ``credential=``, ...). Unknown keys are
        refused so a typo does not go unnoticed."""
        fields = options_from_mapping(cls, data, what="llm compaction")
        fields.update(objects)
        return cls(**fields)


def _check_retry(value: object) -> Any:
    """``None``: follow the session's retry options; ``False``: never retry;
    ``RetryOptions``, a policy, or the camelCase mapping."""
    if value is None or value is False:
        return value
    from prism.retry import RetryOptions

    if callable(getattr(value, "decide", None)):
        return RetryOptions(policy=value)  # type: ignore[arg-type]
    return coerce_options(value, RetryOptions, what="llm compaction option retry")
