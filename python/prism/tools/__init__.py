"""Tools: host-owned definitions, an exact allow/deny registry, and dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.tools.content import (
        IMAGE_MIME_TYPES,
        ImageContent,
        ToolOutput,
        elide_image_data,
    )
    from prism.tools.context import (
        TOOL_EVENT_TYPES,
        ToolEventError,
        ToolEventSink,
    )
    from prism.tools.definition import (
        ToolArgumentsError,
        ToolContext,
        ToolDefinition,
        ToolExecute,
        ToolResultError,
        define_tool,
        tool,
    )
    from prism.tools.dispatch import (
        INVALID_ARGUMENTS,
        INVALID_TOOL_CALL,
        PERMISSION_DENIED,
        POLICY_DENIED,
        TOOL_ERROR,
        TOOL_NOT_ACTIVE,
        UNKNOWN_TOOL,
        dispatch_tool_call,
        run_tool_calls,
        tool_error_result,
    )
    from prism.tools.registry import (
        ToolRegistry,
        create_tool_registry,
    )

_EXPORTS: dict[str, str] = {
    "IMAGE_MIME_TYPES": "prism.tools.content",
    "ImageContent": "prism.tools.content",
    "ToolOutput": "prism.tools.content",
    "elide_image_data": "prism.tools.content",
    "TOOL_EVENT_TYPES": "prism.tools.context",
    "ToolEventError": "prism.tools.context",
    "ToolEventSink": "prism.tools.context",
    "ToolArgumentsError": "prism.tools.definition",
    "ToolContext": "prism.tools.definition",
    "ToolDefinition": "prism.tools.definition",
    "ToolExecute": "prism.tools.definition",
    "ToolResultError": "prism.tools.definition",
    "define_tool": "prism.tools.definition",
    "tool": "prism.tools.definition",
    "INVALID_ARGUMENTS": "prism.tools.dispatch",
    "INVALID_TOOL_CALL": "prism.tools.dispatch",
    "PERMISSION_DENIED": "prism.tools.dispatch",
    "POLICY_DENIED": "prism.tools.dispatch",
    "TOOL_ERROR": "prism.tools.dispatch",
    "TOOL_NOT_ACTIVE": "prism.tools.dispatch",
    "UNKNOWN_TOOL": "prism.tools.dispatch",
    "dispatch_tool_call": "prism.tools.dispatch",
    "run_tool_calls": "prism.tools.dispatch",
    "tool_error_result": "prism.tools.dispatch",
    "ToolRegistry": "prism.tools.registry",
    "create_tool_registry": "prism.tools.registry",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "IMAGE_MIME_TYPES",
    "INVALID_ARGUMENTS",
    "INVALID_TOOL_CALL",
    "PERMISSION_DENIED",
    "POLICY_DENIED",
    "TOOL_ERROR",
    "TOOL_EVENT_TYPES",
    "TOOL_NOT_ACTIVE",
    "UNKNOWN_TOOL",
    "ImageContent",
    "ToolArgumentsError",
    "ToolContext",
    "ToolDefinition",
    "ToolEventError",
    "ToolEventSink",
    "ToolExecute",
    "ToolOutput",
    "ToolRegistry",
    "ToolResultError",
    "create_tool_registry",
    "define_tool",
    "dispatch_tool_call",
    "elide_image_data",
    "run_tool_calls",
    "tool",
    "tool_error_result",
]
