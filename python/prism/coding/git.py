"""``git``: structured git operations (status, diff, log, show, add, commit,
branch, new branch), each run as argv through the execution policy.

Refs and paths from the model never reach git where an option could go: a
ref starting with ``-`` is refused and paths come after ``--``. Destructive
operations (``reset_hard``, ``clean``, ``push`` with force, ``rebase``) are
refused unless the host names them in ``allow_destructive``; the policy
must then allow the argv too. While a merge, rebase or cherry-pick is in
progress, operations that move HEAD are refused with what to do instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prism.coding.shell import describe_result, run_command
from prism.coding.workspace import CodingToolError, CodingWorkspace
from prism.security.execution import ExecutionRule, allow_command
from prism.tools.definition import ToolContext, ToolDefinition

READ_OPS = ("status", "diff", "log", "show", "branch")
WRITE_OPS = ("add", "commit", "create_branch")
DESTRUCTIVE_OPS = ("reset_hard", "clean", "force_push", "rebase")
_MOVES_HEAD = frozenset({"create_branch", "reset_hard", "rebase"})
_IN_PROGRESS = ("MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD", "rebase-merge", "rebase-apply")

GIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "op": {"type": "string", "enum": [*READ_OPS, *WRITE_OPS, *DESTRUCTIVE_OPS]},
        "paths": {"type": "array", "items": {"type": "string"}},
        "staged": {"type": "boolean", "description": "diff: the index instead of the worktree"},
        "rev": {"type": "string", "description": "show/reset_hard/rebase: a revision"},
        "max_count": {"type": "integer", "minimum": 1, "maximum": 200},
        "message": {"type": "string", "minLength": 1, "description": "commit message"},
        "name": {"type": "string", "minLength": 1, "description": "create_branch: its name"},
        "remote": {"type": "string"},
        "branch": {"type": "string"},
    },
    "required": ["op"],
    "additionalProperties": False,
}

_LOG_FORMAT = "--format=%H%x1f%an%x1f%aI%x1f%s"
_BASE = ("git", "-c", "core.quotepath=off", "--no-pager")


def read_only_git_rules() -> list[ExecutionRule]:
    """Rules allowing exactly the argv the read operations build."""
    return [
        allow_command("git", "-c", "core.quotepath=off", "--no-pager", op, "...") for op in READ_OPS
    ]


def _ref(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or value.startswith("-") or "\0" in value:
        raise CodingToolError(f"{what} must be a non-empty name not starting with '-': {value!r}")
    return value


def _argv(ws: CodingWorkspace, op: str, args: dict[str, Any]) -> list[str]:
    # relative to where git runs (the workspace cwd), after the roots check
    paths = [os.path.relpath(ws.resolve(p), ws.cwd) for p in args.get("paths", [])]
    if op == "status":
        return [*_BASE, "status", "--porcelain=v1", "--branch"]
    if op == "diff":
        return [
            *_BASE,
            "diff",
            "--no-color",
            *(["--cached"] if args.get("staged") else []),
            "--",
            *paths,
        ]
    if op == "log":
        return [*_BASE, "log", f"-n{args.get('max_count', 20)}", _LOG_FORMAT, "--", *paths]
    if op == "show":
        return [
            *_BASE,
            "show",
            "--no-color",
            "--stat",
            "--patch",
            _ref(args.get("rev", "HEAD"), "rev"),
        ]
    if op == "branch":
        return [*_BASE, "branch", "--list", "--format=%(HEAD)%(refname:short)"]
    if op == "add":
        if not paths:
            raise CodingToolError("add needs paths")
        return [*_BASE, "add", "--", *paths]
    if op == "commit":
        if "message" not in args:
            raise CodingToolError("commit needs a message")
        return [*_BASE, "commit", "-m", args["message"]]
    if op == "create_branch":
        return [*_BASE, "switch", "-c", _ref(args.get("name"), "name")]
    if op == "reset_hard":
        return [*_BASE, "reset", "--hard", _ref(args.get("rev", "HEAD"), "rev")]
    if op == "clean":
        return [*_BASE, "clean", "-fd"]
    if op == "force_push":
        return [
            *_BASE,
            "push",
            "--force",
            _ref(args.get("remote"), "remote"),
            _ref(args.get("branch"), "branch"),
        ]
    return [*_BASE, "rebase", _ref(args.get("rev"), "rev")]


def find_git_dir(ws: CodingWorkspace, start: str) -> Path | None:
    """The repository's git dir above ``start`` (a ``.git`` file's
    ``gitdir:`` is followed), or ``None`` outside a repository."""
    here = Path(start)
    for directory in (here, *here.parents):
        candidate = directory / ".git"
        info = ws.backend.stat(str(candidate))
        if info is None:
            continue
        if info.is_dir:
            return candidate
        text = ws.backend.read_bytes(str(candidate), 4096).decode("utf-8", "replace")
        if text.startswith("gitdir:"):
            target = Path(text.split(":", 1)[1].strip())
            return target if target.is_absolute() else directory / target
    return None


def operation_in_progress(ws: CodingWorkspace, git_dir: Path) -> str | None:
    for marker in _IN_PROGRESS:
        if ws.backend.stat(str(git_dir / marker)) is not None:
            return {"MERGE_HEAD": "merge", "CHERRY_PICK_HEAD": "cherry-pick"}.get(marker, "rebase")
    return None


def _parse_status(output: str, in_progress: str | None) -> dict[str, Any]:
    branch = ""
    changes: list[dict[str, str]] = []
    for line in output.splitlines():
        if line.startswith("## "):
            branch = line[3:]
        elif len(line) > 3:
            changes.append({"path": line[3:], "index": line[0], "worktree": line[1]})
    status: dict[str, Any] = {"branch": branch, "changes": changes, "clean": not changes}
    if in_progress:
        status["in_progress"] = in_progress
        status["conflicts"] = [c["path"] for c in changes if "U" in (c["index"] + c["worktree"])]
    return status


def _parse_log(output: str) -> list[dict[str, str]]:
    entries = []
    for line in output.splitlines():
        parts = line.split("\x1f")
        if len(parts) == 4:
            entries.append(
                {"commit": parts[0], "author": parts[1], "date": parts[2], "subject": parts[3]}
            )
    return entries


def git_tool(
    ws: CodingWorkspace, *, name: str = "git", allow_destructive: Iterable[str] = ()
) -> ToolDefinition:
    allowed = frozenset(allow_destructive)
    unknown = allowed - set(DESTRUCTIVE_OPS)
    if unknown:
        raise ValueError(f"allow_destructive names unknown operations: {sorted(unknown)}")

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        op = args["op"]
        if op in DESTRUCTIVE_OPS and op not in allowed:
            raise CodingToolError(
                f"git {op} is destructive and not allowed here (the host must allow it by name)"
            )
        argv = _argv(ws, op, args)  # paths and refs are checked before anything else
        git_dir = find_git_dir(ws, ws.cwd)
        if git_dir is None:
            raise CodingToolError(f"{ws.relative(ws.cwd)!r} is not inside a git repository")
        in_progress = operation_in_progress(ws, git_dir)
        if in_progress and op in _MOVES_HEAD:
            raise CodingToolError(
                f"a {in_progress} is in progress; finish it (resolve conflicts, add, commit) "
                f"before git {op}"
            )
        result = await run_command(
            ws, ctx, name, argv, cwd=None, timeout=ws.limits.shell_default_timeout
        )
        if result.exit_code != 0:
            tail = ws.redactor.redact_text(result.output.strip()[-2000:])
            raise CodingToolError(f"git {op} failed (exit {result.exit_code}): {tail}")
        if op == "status":
            return _parse_status(result.output, in_progress)
        if op == "log":
            return {"commits": _parse_log(result.output)}
        if op == "branch":
            lines = [line for line in result.output.splitlines() if line]
            return {
                "branches": [line[1:] for line in lines],
                "current": next((line[1:] for line in lines if line.startswith("*")), None),
            }
        return describe_result(ws, result, ws.limits.shell_default_timeout)

    return ToolDefinition(
        name,
        execute,
        description=(
            "Git in the workspace: status, diff, log, show, branch (read); add, commit, "
            "create_branch (write). Destructive operations only when the host allows them."
        ),
        parameters=GIT_SCHEMA,
        exclusive=True,
    )
