"""git on real repositories the tests create: structured reads, add and
commit, new branches, destructive operations refused by name, not a
repository, mid-merge, option injection."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from coding_helpers import GIT_ENV, Call, error_of, git, init_repo, make_call

from prism.coding import create_coding_tools, read_only_git_rules
from prism.security import NOOP_REDACTOR, allow_command, create_execution_policy

pytestmark = pytest.mark.anyio


async def test_status_diff_add_commit_log(workspace: Path, call: Call) -> None:
    init_repo(workspace)
    (workspace / "src" / "app.py").write_text("def main():\n    return 2\n")
    (workspace / "notes.md").write_text("hi\n")
    status = (await call("git", op="status"))["value"]
    assert status["branch"].startswith("main")
    assert {c["path"] for c in status["changes"]} == {"src/app.py", "notes.md"}
    diff = (await call("git", op="diff"))["value"]["output"]
    assert "+    return 2" in diff
    await call("git", op="add", paths=["src/app.py", "notes.md"])
    staged = (await call("git", op="diff", staged=True))["value"]["output"]
    assert "notes.md" in staged
    await call("git", op="commit", message="return 2")
    log = (await call("git", op="log", max_count=5))["value"]["commits"]
    assert [c["subject"] for c in log] == ["return 2", "initial"]
    assert (await call("git", op="status"))["value"]["clean"] is True
    shown = (await call("git", op="show", rev="HEAD"))["value"]["output"]
    assert "return 2" in shown
    await call("git", op="create_branch", name="feature/x")
    branches = (await call("git", op="branch"))["value"]
    assert branches["current"] == "feature/x" and "main" in branches["branches"]


async def test_destructive_ops_refused_unless_allowed(workspace: Path, call: Call) -> None:
    init_repo(workspace)
    (workspace / "src" / "app.py").write_text("dirty\n")
    for op in ("reset_hard", "clean", "rebase"):
        message = error_of(await call("git", op=op, rev="HEAD"))
        assert f"git {op} is destructive" in message
    assert (workspace / "src" / "app.py").read_text() == "dirty\n"
    policy = create_execution_policy(
        [workspace], [allow_command("git", "...")], redactor=NOOP_REDACTOR
    )
    allowed = make_call(
        create_coding_tools(
            workspace,
            execution_policy=policy,
            env=GIT_ENV,
            git_allow_destructive=["reset_hard"],
            redactor=NOOP_REDACTOR,
        )
    )
    assert not (await allowed("git", op="reset_hard")).get("isError")
    assert (workspace / "src" / "app.py").read_text().startswith("def main")


async def test_option_injection_and_bad_paths(workspace: Path, call: Call, tmp_path: Path) -> None:
    init_repo(workspace)
    assert "must be a non-empty name not starting with '-'" in error_of(
        await call("git", op="show", rev="--output=/tmp/pwned")
    )
    assert "starting with '-'" in error_of(await call("git", op="create_branch", name="-f"))
    refused = await call("git", op="add", paths=[str(tmp_path / "x")])
    assert refused["value"]["code"] == "policy_denied"


async def test_not_a_repository(call: Call) -> None:
    message = error_of(await call("git", op="status"))
    assert "is not inside a git repository" in message


async def test_mid_merge(workspace: Path, call: Call) -> None:
    init_repo(workspace)
    git(workspace, "switch", "-q", "-c", "other")
    (workspace / "src" / "app.py").write_text("other\n")
    git(workspace, "commit", "-qam", "other")
    git(workspace, "switch", "-q", "main")
    (workspace / "src" / "app.py").write_text("mine\n")
    git(workspace, "commit", "-qam", "mine")
    with pytest.raises(subprocess.CalledProcessError):
        git(workspace, "merge", "other")
    status = (await call("git", op="status"))["value"]
    assert status["in_progress"] == "merge" and status["conflicts"] == ["src/app.py"]
    message = error_of(await call("git", op="create_branch", name="escape"))
    assert "a merge is in progress" in message
    commit = error_of(await call("git", op="commit", message="x"))
    assert "git commit failed" in commit


async def test_read_only_rules_allow_reads_only(workspace: Path) -> None:
    init_repo(workspace)
    policy = create_execution_policy([workspace], read_only_git_rules(), redactor=NOOP_REDACTOR)
    call = make_call(
        create_coding_tools(workspace, execution_policy=policy, env=GIT_ENV, redactor=NOOP_REDACTOR)
    )
    assert not (await call("git", op="status")).get("isError")
    assert not (await call("git", op="log")).get("isError")
    (workspace / "new.txt").write_text("x")
    denied = await call("git", op="add", paths=["new.txt"])
    assert denied["value"]["code"] == "policy_denied"


async def test_paths_are_relative_to_the_workspace_cwd(workspace: Path) -> None:
    init_repo(workspace)
    policy = create_execution_policy(
        [workspace], [allow_command("git", "...")], redactor=NOOP_REDACTOR
    )
    call = make_call(
        create_coding_tools(
            workspace / "src", execution_policy=policy, env=GIT_ENV, redactor=NOOP_REDACTOR
        )
    )
    (workspace / "src" / "app.py").write_text("changed\n")
    assert not (await call("git", op="add", paths=["app.py"])).get("isError")
    assert "src/app.py" in git(workspace, "diff", "--cached", "--name-only")
