"""Prism: an agent harness with a Rust core for its hot paths.

The top level is what a host uses day to day: the agent and its sessions,
the main wire contracts, the errors a host catches, the store factories,
tool definition, the provider protocol and factories, and the option types
of middleware, retry, compaction and attention. Everything else lives in
its subpackage (``prism.providers``, ``prism.assembly``, ``prism.config``,
...). tests/test_public_api.py pins ``__all__`` so additions are deliberate.

Names load on first use (PEP 562), so ``import prism`` costs almost nothing and
a command that needs only part of the package never imports the rest.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from prism._lazy import attach

# A library prints nothing on its own: records go nowhere until the host
# configures logging or calls prism.log.enable_logging (docs/logging.md).
logging.getLogger("prism").addHandler(logging.NullHandler())

__version__ = "0.1.0"

# name -> the module that defines it; ``__getattr__`` imports on first use.
_EXPORTS: dict[str, str] = {
    "AttentionBudgetError": "prism.attention",
    "AttentionCompilerOptions": "prism.attention",
    "CompactionOptions": "prism.compaction",
    "AgentEvent": "prism.contracts",
    "ContentBlock": "prism.contracts",
    "ErrorInfo": "prism.contracts",
    "Message": "prism.contracts",
    "ModelConfig": "prism.contracts",
    "ProviderEvent": "prism.contracts",
    "ProviderRequest": "prism.contracts",
    "SessionEntry": "prism.contracts",
    "ToolCall": "prism.contracts",
    "ToolDeclaration": "prism.contracts",
    "ToolResult": "prism.contracts",
    "Usage": "prism.contracts",
    "ConfigError": "prism.errors",
    "CredentialError": "prism.errors",
    "MaxToolRoundsError": "prism.errors",
    "NoActiveRunError": "prism.errors",
    "PermissionDeniedError": "prism.errors",
    "PrismError": "prism.errors",
    "ProviderError": "prism.errors",
    "RunAbortedError": "prism.errors",
    "SessionBusyError": "prism.errors",
    "StoreError": "prism.errors",
    "StructuredOutputError": "prism.errors",
    "UnknownNameError": "prism.errors",
    "create_middleware_registry": "prism.middleware",
    "AIProvider": "prism.providers",
    "create_mock_provider": "prism.providers",
    "create_provider_registry": "prism.providers",
    "create_openai_compatible_provider": "prism.providers.openai_compatible",
    "get_provider_preset": "prism.providers.packages",
    "RetryOptions": "prism.retry",
    "AgentSession": "prism.runtime",
    "RunOptions": "prism.runtime",
    "RunResult": "prism.runtime",
    "create_agent": "prism.runtime",
    "PermissionDecision": "prism.security.permissions",
    "PermissionPolicy": "prism.security.permissions",
    "PermissionRequest": "prism.security.permissions",
    "SessionStore": "prism.stores",
    "create_jsonl_session_store": "prism.stores",
    "create_memory_session_store": "prism.stores",
    "create_sqlite_session_store": "prism.stores",
    "ToolContext": "prism.tools",
    "define_tool": "prism.tools",
    "tool": "prism.tools",
}

if TYPE_CHECKING:
    from prism.attention import (
        AttentionBudgetError,
        AttentionCompilerOptions,
    )
    from prism.compaction import (
        CompactionOptions,
    )
    from prism.contracts import (
        AgentEvent,
        ContentBlock,
        ErrorInfo,
        Message,
        ModelConfig,
        ProviderEvent,
        ProviderRequest,
        SessionEntry,
        ToolCall,
        ToolDeclaration,
        ToolResult,
        Usage,
    )
    from prism.errors import (
        ConfigError,
        CredentialError,
        MaxToolRoundsError,
        NoActiveRunError,
        PermissionDeniedError,
        PrismError,
        ProviderError,
        RunAbortedError,
        SessionBusyError,
        StoreError,
        StructuredOutputError,
        UnknownNameError,
    )
    from prism.middleware import (
        create_middleware_registry,
    )
    from prism.providers import (
        AIProvider,
        create_mock_provider,
        create_provider_registry,
    )
    from prism.providers.openai_compatible import (
        create_openai_compatible_provider,
    )
    from prism.providers.packages import (
        get_provider_preset,
    )
    from prism.retry import (
        RetryOptions,
    )
    from prism.runtime import (
        AgentSession,
        RunOptions,
        RunResult,
        create_agent,
    )
    from prism.security.permissions import (
        PermissionDecision,
        PermissionPolicy,
        PermissionRequest,
    )
    from prism.stores import (
        SessionStore,
        create_jsonl_session_store,
        create_memory_session_store,
        create_sqlite_session_store,
    )
    from prism.tools import (
        ToolContext,
        define_tool,
        tool,
    )


__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
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
