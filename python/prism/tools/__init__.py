"""Tools: host-owned definitions, an exact allow/deny registry, and dispatch."""

from prism.tools.definition import ToolContext, ToolDefinition, ToolExecute, define_tool, tool
from prism.tools.dispatch import (
    INVALID_ARGUMENTS,
    INVALID_TOOL_CALL,
    PERMISSION_DENIED,
    TOOL_ERROR,
    TOOL_NOT_ACTIVE,
    UNKNOWN_TOOL,
    dispatch_tool_call,
    run_tool_calls,
    tool_error_result,
)
from prism.tools.registry import ToolRegistry, create_tool_registry

__all__ = [
    "INVALID_ARGUMENTS",
    "INVALID_TOOL_CALL",
    "PERMISSION_DENIED",
    "TOOL_ERROR",
    "TOOL_NOT_ACTIVE",
    "UNKNOWN_TOOL",
    "ToolContext",
    "ToolDefinition",
    "ToolExecute",
    "ToolRegistry",
    "create_tool_registry",
    "define_tool",
    "dispatch_tool_call",
    "run_tool_calls",
    "tool",
    "tool_error_result",
]
