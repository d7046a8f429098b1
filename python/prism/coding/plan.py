"""Plan and todo state: the ``todo`` tool, ``CodingState`` (what a durable
checkpoint carries as ``state.coding``) and ``write_coding_plan_file``
(a Markdown plan kept in the workspace).

The todo tool replaces the whole list on each call (as Claude Code's
TodoWrite does): the model always states the full plan, so no call can
leave it half-updated, and at most one item is ``in_progress``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

from prism.coding.backend import LocalBackend, WorkspaceBackend
from prism.coding.workspace import CodingToolError, CodingWorkspace, digest_of
from prism.tools.definition import ToolContext, ToolDefinition

TodoStatus = Literal["pending", "in_progress", "completed"]
MAX_TODOS = 50
MAX_TODO_CHARS = 500
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "maxItems": MAX_TODOS,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_TODO_CHARS},
                    "status": {"type": "string", "enum": list(get_args(TodoStatus))},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        },
        "blockers": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
        "next_check": {"type": "string", "description": "The next verification step."},
    },
    "required": ["todos"],
    "additionalProperties": False,
}


@dataclass(slots=True)
class CodingState:
    """Plan/todo state per session; ``for_session`` is the ``state.coding``
    shape. Given to ``create_agent(checkpoint_state=[state])``, a durable
    run's checkpoints carry it and a resumed run restores it."""

    state_key: ClassVar[str] = "coding"
    todos: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    blockers: dict[str, list[str]] = field(default_factory=dict)
    next_check: dict[str, str] = field(default_factory=dict)

    def for_session(self, session_id: str | None) -> dict[str, Any]:
        key = session_id or ""
        out: dict[str, Any] = {"todos": list(self.todos.get(key, []))}
        if self.blockers.get(key):
            out["blockers"] = list(self.blockers[key])
        if self.next_check.get(key):
            out["nextCheck"] = self.next_check[key]
        return out

    def restore(self, session_id: str | None, data: Mapping[str, Any]) -> None:
        """Load one session's ``state.coding`` back (from a checkpoint)."""
        todos = data.get("todos", [])
        self.todos[session_id or ""] = _check_todos(todos)
        blockers = data.get("blockers")
        if isinstance(blockers, list):
            self.blockers[session_id or ""] = [str(b) for b in blockers]
        if isinstance(data.get("nextCheck"), str):
            self.next_check[session_id or ""] = data["nextCheck"]


def _check_todos(todos: object) -> list[dict[str, str]]:
    if not isinstance(todos, list) or len(todos) > MAX_TODOS:
        raise CodingToolError(f"todos must be a list of at most {MAX_TODOS} items")
    out: list[dict[str, str]] = []
    for index, item in enumerate(todos):
        if not isinstance(item, Mapping) or not isinstance(item.get("content"), str):
            raise CodingToolError(f"todos[{index}] needs a content string")
        if item.get("status") not in _MARK:
            raise CodingToolError(f"todos[{index}].status must be one of {sorted(_MARK)}")
        out.append({"content": item["content"][:MAX_TODO_CHARS], "status": item["status"]})
    if sum(1 for item in out if item["status"] == "in_progress") > 1:
        raise CodingToolError("at most one todo may be in_progress")
    return out


def render_plan(state: Mapping[str, Any], title: str = "Plan") -> str:
    """The Markdown plan file's text for one session's state."""
    rows = [f"# {title}", ""]
    for item in state.get("todos", []):
        rows.append(f"- {_MARK[item['status']]} {item['content']}")
    if state.get("blockers"):
        rows += ["", "## Blockers", ""] + [f"- {b}" for b in state["blockers"]]
    if state.get("nextCheck"):
        rows += ["", "## Next check", "", state["nextCheck"]]
    return "\n".join(rows) + "\n"


def write_coding_plan_file(
    path: str | os.PathLike[str],
    state: Mapping[str, Any],
    *,
    backend: WorkspaceBackend | None = None,
    title: str = "Plan",
) -> str:
    """Write the Markdown plan atomically; returns its digest. The caller
    checks ``path`` against its roots (the todo tool does, via the policy)."""
    data = render_plan(state, title).encode("utf-8")
    store = backend or LocalBackend()
    target = os.fspath(path)
    store.make_dirs(os.path.dirname(target) or ".")
    store.write_atomic(target, data, None)
    return digest_of(data)


def todo_tool(
    ws: CodingWorkspace,
    state: CodingState,
    *,
    name: str = "todo",
    plan_file: str | None = None,
) -> ToolDefinition:
    """The todo tool; with ``plan_file`` (workspace-relative) each change is
    also written there as Markdown (an execution-policy ``write``)."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        todos = _check_todos(args["todos"])
        key = ctx.session_id or ""
        state.todos[key] = todos
        state.blockers[key] = [str(b) for b in args.get("blockers", [])]
        if "next_check" in args:
            state.next_check[key] = args["next_check"]
        current = state.for_session(ctx.session_id)
        event: dict[str, Any] = {"type": "plan_changed", "todos": todos, "counts": _counts(todos)}
        if plan_file is not None:
            real = ws.resolve(plan_file)
            action = await ws.authorize("write", ctx, name, paths=[str(real)])
            target = action.paths[0] if action.paths else str(real)
            event["path"] = ws.relative(target)
            event["digest"] = write_coding_plan_file(target, current, backend=ws.backend)
        if ctx.tool_call_id:
            event["toolCallId"] = ctx.tool_call_id
        await ws.emit(event, ctx)
        counts = _counts(todos)
        return f"plan updated: {counts['completed']}/{len(todos)} done, {counts['in_progress']} in progress"

    return ToolDefinition(
        name,
        execute,
        description=(
            "Keep the task plan: send the whole todo list each time (content, status "
            "pending/in_progress/completed; at most one in_progress), plus blockers and the next check."
        ),
        parameters=TODO_SCHEMA,
        idempotent=True,
    )


def _counts(todos: Sequence[Mapping[str, str]]) -> dict[str, int]:
    counts = dict.fromkeys(_MARK, 0)
    for item in todos:
        counts[item["status"]] += 1
    return counts
