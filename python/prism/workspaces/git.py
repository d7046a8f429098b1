"""The few git commands workspaces run, as real subprocesses."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import anyio

from prism.workspaces.errors import WorkspaceGitError

# No prompts, no pager, messages in English (they end up in errors).
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", "LANGUAGE": "C"}


class GitResult:
    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr


async def git(cwd: Path, *args: str) -> GitResult:
    env = {**os.environ, **_ENV}
    try:
        done = await anyio.run_process(["git", "-C", str(cwd), *args], check=False, env=env)
    except FileNotFoundError:
        raise WorkspaceGitError("git is not installed (no 'git' on PATH)") from None
    return GitResult(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace").strip(),
    )


async def git_ok(cwd: Path, *args: str, doing: str) -> str:
    result = await git(cwd, *args)
    if result.code != 0:
        raise WorkspaceGitError(
            f"{doing} failed: git {_show(args)}: {result.stderr or 'exit ' + str(result.code)}"
        )
    return result.stdout


def _show(args: Sequence[str]) -> str:
    return " ".join(args)


async def is_repository(root: Path) -> bool:
    result = await git(root, "rev-parse", "--is-inside-work-tree")
    return result.code == 0 and result.stdout.strip() == "true"


async def branch_exists(root: Path, branch: str) -> bool:
    result = await git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    return result.code == 0


async def valid_branch_name(root: Path, branch: str) -> bool:
    if branch.startswith("-"):
        return False
    result = await git(root, "check-ref-format", "--branch", branch)
    return result.code == 0


async def head_commit(root: Path) -> str:
    return (
        await git_ok(root, "rev-parse", "--verify", "HEAD^{commit}", doing="reading HEAD")
    ).strip()


async def registered_worktrees(root: Path) -> set[Path]:
    out = await git_ok(root, "worktree", "list", "--porcelain", doing="listing worktrees")
    return {
        Path(line[len("worktree ") :]).resolve()
        for line in out.splitlines()
        if line.startswith("worktree ")
    }


async def changes(worktree: Path) -> list[str]:
    out = await git_ok(
        worktree, "status", "--porcelain", "--untracked-files=all", doing="checking for changes"
    )
    return [line for line in out.splitlines() if line.strip()]


async def branch_tip(root: Path, branch: str) -> str | None:
    result = await git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    return result.stdout.strip() if result.code == 0 else None
