"""Providers: the ``AIProvider`` contract, event helpers, the mock provider and
the explicit provider/model registry. Real adapters live in sibling modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.providers.anthropic import (
        AnthropicProvider,
        AnthropicRequestPolicy,
        create_anthropic_provider,
    )
    from prism.providers.base import (
        PROVIDER_EVENT_TYPES,
        PROVIDER_EXCEPTION_CODE,
        TERMINAL_EVENT_TYPES,
        AIProvider,
        error_info_from_exception,
        normalize_usage,
        provider_done,
        provider_error,
        provider_text_delta,
        provider_thinking_delta,
        provider_tool_call,
        provider_tool_call_delta,
        provider_usage,
        validate_provider_event,
    )
    from prism.providers.mock import (
        MockProvider,
        create_mock_provider,
    )
    from prism.providers.openai_responses import (
        OpenAIResponsesProvider,
        ResponsesRequestPolicy,
        create_openai_responses_provider,
    )
    from prism.providers.registry import (
        ProviderRegistry,
        create_provider_registry,
    )

_EXPORTS: dict[str, str] = {
    "AnthropicProvider": "prism.providers.anthropic",
    "AnthropicRequestPolicy": "prism.providers.anthropic",
    "create_anthropic_provider": "prism.providers.anthropic",
    "PROVIDER_EVENT_TYPES": "prism.providers.base",
    "PROVIDER_EXCEPTION_CODE": "prism.providers.base",
    "TERMINAL_EVENT_TYPES": "prism.providers.base",
    "AIProvider": "prism.providers.base",
    "error_info_from_exception": "prism.providers.base",
    "normalize_usage": "prism.providers.base",
    "provider_done": "prism.providers.base",
    "provider_error": "prism.providers.base",
    "provider_text_delta": "prism.providers.base",
    "provider_thinking_delta": "prism.providers.base",
    "provider_tool_call": "prism.providers.base",
    "provider_tool_call_delta": "prism.providers.base",
    "provider_usage": "prism.providers.base",
    "validate_provider_event": "prism.providers.base",
    "MockProvider": "prism.providers.mock",
    "create_mock_provider": "prism.providers.mock",
    "OpenAIResponsesProvider": "prism.providers.openai_responses",
    "ResponsesRequestPolicy": "prism.providers.openai_responses",
    "create_openai_responses_provider": "prism.providers.openai_responses",
    "ProviderRegistry": "prism.providers.registry",
    "create_provider_registry": "prism.providers.registry",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "PROVIDER_EVENT_TYPES",
    "PROVIDER_EXCEPTION_CODE",
    "TERMINAL_EVENT_TYPES",
    "AIProvider",
    "AnthropicProvider",
    "AnthropicRequestPolicy",
    "MockProvider",
    "OpenAIResponsesProvider",
    "ProviderRegistry",
    "ResponsesRequestPolicy",
    "create_anthropic_provider",
    "create_mock_provider",
    "create_openai_responses_provider",
    "create_provider_registry",
    "error_info_from_exception",
    "normalize_usage",
    "provider_done",
    "provider_error",
    "provider_text_delta",
    "provider_thinking_delta",
    "provider_tool_call",
    "provider_tool_call_delta",
    "provider_usage",
    "validate_provider_event",
]
