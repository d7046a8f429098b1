"""Coding tools: read, write, edit, search, list, shell, git, check and todo
over a workspace, each checking the execution policy before any side effect
(docs/coding.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.coding.backend import (
        ExecResult,
        FileStat,
        LocalBackend,
        WorkspaceBackend,
    )
    from prism.coding.check import (
        CheckCommand,
        check_tool,
        parse_diagnostics,
    )
    from prism.coding.compaction import (
        CodingCompactionStrategy,
        coding_state_lines,
        create_coding_compaction_strategy,
    )
    from prism.coding.files import (
        edit_tool,
        read_tool,
        write_tool,
    )
    from prism.coding.git import (
        DESTRUCTIVE_OPS,
        git_tool,
        read_only_git_rules,
    )
    from prism.coding.plan import (
        CodingState,
        render_plan,
        todo_tool,
        write_coding_plan_file,
    )
    from prism.coding.search import (
        list_tool,
        search_tool,
    )
    from prism.coding.shell import (
        shell_tool,
    )
    from prism.coding.tools import (
        CodingToolSet,
        create_coding_tools,
    )
    from prism.coding.workspace import (
        CodingEventHandler,
        CodingLimits,
        CodingToolError,
        CodingWorkspace,
        create_coding_workspace,
    )

_EXPORTS: dict[str, str] = {
    "ExecResult": "prism.coding.backend",
    "FileStat": "prism.coding.backend",
    "LocalBackend": "prism.coding.backend",
    "WorkspaceBackend": "prism.coding.backend",
    "CheckCommand": "prism.coding.check",
    "check_tool": "prism.coding.check",
    "parse_diagnostics": "prism.coding.check",
    "CodingCompactionStrategy": "prism.coding.compaction",
    "coding_state_lines": "prism.coding.compaction",
    "create_coding_compaction_strategy": "prism.coding.compaction",
    "edit_tool": "prism.coding.files",
    "read_tool": "prism.coding.files",
    "write_tool": "prism.coding.files",
    "DESTRUCTIVE_OPS": "prism.coding.git",
    "git_tool": "prism.coding.git",
    "read_only_git_rules": "prism.coding.git",
    "CodingState": "prism.coding.plan",
    "render_plan": "prism.coding.plan",
    "todo_tool": "prism.coding.plan",
    "write_coding_plan_file": "prism.coding.plan",
    "list_tool": "prism.coding.search",
    "search_tool": "prism.coding.search",
    "shell_tool": "prism.coding.shell",
    "CodingToolSet": "prism.coding.tools",
    "create_coding_tools": "prism.coding.tools",
    "CodingEventHandler": "prism.coding.workspace",
    "CodingLimits": "prism.coding.workspace",
    "CodingToolError": "prism.coding.workspace",
    "CodingWorkspace": "prism.coding.workspace",
    "create_coding_workspace": "prism.coding.workspace",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "DESTRUCTIVE_OPS",
    "CheckCommand",
    "CodingCompactionStrategy",
    "CodingEventHandler",
    "CodingLimits",
    "CodingState",
    "CodingToolError",
    "CodingToolSet",
    "CodingWorkspace",
    "ExecResult",
    "FileStat",
    "LocalBackend",
    "WorkspaceBackend",
    "check_tool",
    "coding_state_lines",
    "create_coding_compaction_strategy",
    "create_coding_tools",
    "create_coding_workspace",
    "edit_tool",
    "git_tool",
    "list_tool",
    "parse_diagnostics",
    "read_only_git_rules",
    "read_tool",
    "render_plan",
    "search_tool",
    "shell_tool",
    "todo_tool",
    "write_coding_plan_file",
    "write_tool",
]
