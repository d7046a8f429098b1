"""Workspaces: a git worktree per task, under ownership scopes and fenced
leases (docs/workspaces.md).

Makes a throwaway git repository, approves it as ``app``, then: creates a
workspace (one ``git worktree add`` on branch ``agent/fix-login``), shows
that another tenant can neither read nor clean it, refuses to clean it up
while it has uncommitted work, cleans it up once the work is committed
(the branch and its commit stay), and shows a stale worker fenced out of a
checkpoint. Needs git.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import anyio

from prism.workspaces import (
    LegRequest,
    OwnershipScope,
    WorkspaceDirtyError,
    WorkspaceFenceError,
    WorkspaceOwnershipError,
    create_fenced_store,
    create_workspaces,
)

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Example",
    "GIT_AUTHOR_EMAIL": "example@example.invalid",
    "GIT_COMMITTER_NAME": "Example",
    "GIT_COMMITTER_EMAIL": "example@example.invalid",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repository(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "login.py").write_text("def login(user):\n    return False\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "initial")
    return path


async def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch).resolve()
        repo = make_repository(root / "app")
        alice = OwnershipScope(tenant="acme", user="alice")
        workspaces = create_workspaces(
            root / "workspaces.db",  # SQLite; a postgresql:// DSN for a fleet, None for memory
            worktree_roots={"app": repo},
            worktree_dir=root / "worktrees",
        )
        record = await workspaces.create("fix-login", scope=alice, legs=[LegRequest("app")])
        leg = record.legs[0]
        print(f"created {record.id}: {record.state}, branch {leg.branch}")
        print(f"worktree: {leg.path.relative_to(root)}")

        try:
            await workspaces.get("fix-login", scope=OwnershipScope(tenant="other"))
        except WorkspaceOwnershipError as error:
            print(f"another tenant: {error.code}")

        (leg.path / "login.py").write_text("def login(user):\n    return user.active\n")
        try:
            await workspaces.cleanup("fix-login", scope=alice)
        except WorkspaceDirtyError as error:
            print(f"cleanup refused: {error.code}")

        git(leg.path, "commit", "-q", "-am", "fix login")
        closed = await workspaces.cleanup("fix-login", scope=alice)
        print(f"after cleanup: {closed.state}; worktree exists: {leg.path.exists()}")
        print(f"branch kept: {git(repo, 'log', '-1', '--format=%s', leg.branch).strip()}")
        await workspaces.close()

        # The lease and checkpoint layer underneath, on its own.
        store = create_fenced_store(str(root / "checkpoints.db"))
        first = await store.try_acquire("task/1", scope=alice, owner="worker-1", ttl=30)
        assert first is not None
        await store.save("task/1", {"step": 1}, version=0, lease=first)
        await store.release(first)  # (or its TTL runs out)
        second = await store.try_acquire("task/1", scope=alice, owner="worker-2")
        assert second is not None
        print(f"fencing tokens: worker-1 {first.token}, worker-2 {second.token}")
        try:
            await store.save("task/1", {"step": "stale"}, version=1, lease=first)
        except WorkspaceFenceError as error:
            print(f"worker-1 fenced: {error.code}")
        saved = await store.save("task/1", {"step": 2}, version=1, lease=second)
        print(f"checkpoint version {saved.version}: {dict(saved.data)}")
        await store.close()


if __name__ == "__main__":
    anyio.run(main)
