"""``create_coding_tools``: the whole coding tool set over one workspace."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from prism.coding.backend import WorkspaceBackend
from prism.coding.check import CheckCommand, check_tool
from prism.coding.files import edit_tool, read_tool, write_tool
from prism.coding.git import git_tool
from prism.coding.plan import CodingState, todo_tool
from prism.coding.search import list_tool, search_tool
from prism.coding.shell import shell_tool
from prism.coding.workspace import (
    CodingEventHandler,
    CodingLimits,
    CodingWorkspace,
    create_coding_workspace,
)
from prism.security.execution import ExecutionPolicy
from prism.security.redaction import SecretRedactor, require_redactor
from prism.tools.definition import ToolDefinition


class CodingToolSet(list[ToolDefinition]):
    """What ``create_coding_tools`` returns: a list of the tools (pass it as
    ``create_agent(tools=...)``) that also holds the workspace they share
    and the plan state."""

    def __init__(
        self, tools: Iterable[ToolDefinition], workspace: CodingWorkspace, state: CodingState
    ) -> None:
        super().__init__(tools)
        self.workspace = workspace
        self.state = state

    def by_name(self, name: str) -> ToolDefinition:
        for definition in self:
            if definition.name == name:
                return definition
        raise KeyError(name)


def create_coding_tools(
    cwd: str | os.PathLike[str],
    *,
    execution_policy: ExecutionPolicy | None = None,
    backend: WorkspaceBackend | None = None,
    limits: CodingLimits | None = None,
    redactor: SecretRedactor,
    on_event: CodingEventHandler | None = None,
    env: Mapping[str, str] | None = None,
    inherit_env: Sequence[str] = (),
    checks: Mapping[str, CheckCommand | Sequence[str]] | None = None,
    git_allow_destructive: Iterable[str] = (),
    plan_file: str | None = None,
    state: CodingState | None = None,
) -> CodingToolSet:
    """read, write, edit, search, list, shell, git, todo (and check when
    ``checks`` are configured), all over one workspace rooted at ``cwd``.

    Without ``execution_policy`` the default policy applies: roots ``[cwd]``,
    reads allowed, everything with a side effect refused (no approver).
    """
    redactor = require_redactor(redactor, owner="create_coding_tools")
    workspace = create_coding_workspace(
        cwd,
        execution_policy=execution_policy,
        backend=backend,
        limits=limits,
        redactor=redactor,
        on_event=on_event,
        env=env,
        inherit_env=inherit_env,
    )
    plan_state = state if state is not None else CodingState()
    tools = coding_tool_list(
        workspace,
        plan_state,
        search=search_tool(workspace),
        listing=list_tool(workspace),
        checks=checks,
        git_allow_destructive=git_allow_destructive,
        plan_file=plan_file,
    )
    return CodingToolSet(tools, workspace, plan_state)


def coding_tool_list(
    workspace: CodingWorkspace,
    plan_state: CodingState,
    *,
    search: ToolDefinition,
    listing: ToolDefinition,
    checks: Mapping[str, CheckCommand | Sequence[str]] | None,
    git_allow_destructive: Iterable[str],
    plan_file: str | None,
) -> list[ToolDefinition]:
    """The coding tools in their order over ``workspace``, with ``search`` and
    ``listing`` from wherever the files are searched (here or in a sandbox)."""
    tools = [
        read_tool(workspace),
        write_tool(workspace),
        edit_tool(workspace),
        search,
        listing,
        shell_tool(workspace),
        git_tool(workspace, allow_destructive=git_allow_destructive),
        todo_tool(workspace, plan_state, plan_file=plan_file),
    ]
    if checks:
        tools.append(check_tool(workspace, checks))
    return tools
