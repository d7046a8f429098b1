"""The top-level API is deliberate: ``prism.__all__`` is pinned here.

Adding a name to ``prism`` means adding it to this list in the same change,
with a reason it belongs to what a host uses day to day (docs/architecture.md,
"The public API"); everything else is imported from its subpackage.
"""

from __future__ import annotations

import importlib

import prism

EXPECTED = sorted(
    [
        "AIProvider",
        "AgentEvent",
        "AgentSession",
        "AttentionBudgetError",
        "AttentionCompilerOptions",
        "CompactionOptions",
        "ConfigError",
        "ContentBlock",
        "CredentialError",
        "ErrorInfo",
        "MaxToolRoundsError",
        "Message",
        "ModelConfig",
        "NoActiveRunError",
        "PermissionDecision",
        "PermissionDeniedError",
        "PermissionPolicy",
        "PermissionRequest",
        "PrismError",
        "ProviderError",
        "ProviderEvent",
        "ProviderRequest",
        "RetryOptions",
        "RunAbortedError",
        "RunOptions",
        "RunResult",
        "SessionBusyError",
        "SessionEntry",
        "SessionStore",
        "StoreError",
        "StructuredOutputError",
        "ToolCall",
        "ToolContext",
        "ToolDeclaration",
        "ToolResult",
        "UnknownNameError",
        "Usage",
        "__version__",
        "create_agent",
        "create_jsonl_session_store",
        "create_memory_session_store",
        "create_middleware_registry",
        "create_mock_provider",
        "create_openai_compatible_provider",
        "create_provider_registry",
        "create_sqlite_session_store",
        "define_tool",
        "get_provider_preset",
        "tool",
    ]
)


def test_the_top_level_names_are_exactly_the_pinned_list() -> None:
    assert sorted(prism.__all__) == EXPECTED


def test_every_top_level_name_resolves() -> None:
    for name in prism.__all__:
        assert getattr(prism, name) is not None, name


def test_one_of_class_or_factory_per_type() -> None:
    """A type with a ``create_*`` factory at the top level is not also exported
    as a class (the factory is the supported way to build it)."""
    factories = [name for name in prism.__all__ if name.startswith("create_")]
    for factory in factories:
        made = getattr(prism, factory)
        returned = made.__annotations__["return"]
        assert isinstance(returned, str), factory  # postponed annotations
        assert returned.split("[")[0] not in prism.__all__, f"{factory} and {returned} exported"


def test_a_name_moved_off_the_top_level_is_still_in_its_subpackage() -> None:
    moved = {
        "provider_text_delta": "prism.providers",
        "create_tool_registry": "prism.tools",
        "json_length": "prism._native",
        "create_redactor": "prism.security.redaction",
        "Agent": "prism.runtime",
    }
    for name, module in moved.items():
        assert name not in prism.__all__
        assert getattr(importlib.import_module(module), name) is not None
