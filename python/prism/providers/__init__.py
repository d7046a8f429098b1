"""Providers: the ``AIProvider`` contract, event helpers, the mock provider and
the explicit provider/model registry. Real adapters live in sibling modules."""

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
from prism.providers.mock import MockProvider, create_mock_provider
from prism.providers.registry import ProviderRegistry, create_provider_registry

__all__ = [
    "PROVIDER_EVENT_TYPES",
    "PROVIDER_EXCEPTION_CODE",
    "TERMINAL_EVENT_TYPES",
    "AIProvider",
    "MockProvider",
    "ProviderRegistry",
    "create_mock_provider",
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
