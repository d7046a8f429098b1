"""Shared fixtures: a real workspace directory, tool sets over it, and a
``call`` that goes through real dispatch (so refusals are tool errors)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from prism.coding import CodingToolSet, create_coding_tools
from prism.security import NOOP_REDACTOR, allow_kinds, create_execution_policy
from prism.tools import ToolContext, create_tool_registry, dispatch_tool_call

Call = Callable[..., Awaitable[dict[str, Any]]]

GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "GIT_AUTHOR_NAME": "Prism Test",
    "GIT_AUTHOR_EMAIL": "prism@example.invalid",
    "GIT_COMMITTER_NAME": "Prism Test",
    "GIT_COMMITTER_EMAIL": "prism@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    return root


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def tools(workspace: Path, events: list[dict[str, Any]]) -> CodingToolSet:
    """Reads, writes, edits and shell allowed by rule inside the workspace."""
    policy = create_execution_policy(
        [workspace], [allow_kinds("write", "edit", "shell", "delete")], redactor=NOOP_REDACTOR
    )
    return create_coding_tools(
        workspace,
        execution_policy=policy,
        on_event=events.append,
        env=GIT_ENV,
        redactor=NOOP_REDACTOR,
    )


def make_call(toolset: CodingToolSet) -> Call:
    registry = create_tool_registry(list(toolset))

    async def call(tool_name: str, session: str = "s1", **arguments: Any) -> dict[str, Any]:
        result = await dispatch_tool_call(
            {"id": f"call-{tool_name}", "name": tool_name, "arguments": arguments},
            registry=registry,
            context=ToolContext(session_id=session, run_id="r1"),
            redactor=NOOP_REDACTOR,
        )
        return dict(result)

    return call


@pytest.fixture
def call(tools: CodingToolSet) -> Call:
    return make_call(tools)


def error_of(result: dict[str, Any]) -> str:
    assert result.get("isError"), result
    return str(result["value"]["message"])


def need_git() -> str:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is not installed; .ci/install-coding-tools installs it")
    return git


def git(repo: Path, *args: str) -> str:
    need_git()
    done = subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


def init_repo(repo: Path) -> Path:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo
