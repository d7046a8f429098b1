"""Workspaces over real git repositories: worktrees added and removed by git
itself, records under ownership scopes, and every refusal clear and lossless."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.workspaces.conftest import OTHER, SCOPE
from tests.workspaces.gitrepo import branches, make_repo, run_git, worktrees

from prism.workspaces import (
    CleanupPolicy,
    LegRequest,
    WorkspaceBusyError,
    WorkspaceConfigError,
    WorkspaceConflictError,
    WorkspaceDirtyError,
    WorkspaceGitError,
    WorkspaceMissingError,
    WorkspaceNotFoundError,
    WorkspaceOwnershipError,
    Workspaces,
    create_workspaces,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "sqlite"])
async def workspaces(
    request: pytest.FixtureRequest, tmp_path: Path, repo: Path, worktree_dir: Path
) -> AsyncIterator[Workspaces]:
    store = None if request.param == "memory" else tmp_path / "ws.db"
    made = create_workspaces(store, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    yield made
    await made.close()


async def test_create_adds_a_real_worktree_on_its_own_branch(
    workspaces: Workspaces, repo: Path, worktree_dir: Path
) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    leg = record.legs[0]
    assert (record.state, leg.state, leg.repository_id) == ("open", "open", "app")
    assert leg.branch == "agent/ws-1"
    assert leg.path == worktree_dir.resolve() / "ws-1" / "app"
    assert (leg.path / "README.md").read_text() == "hello\n"
    assert leg.path.resolve() in worktrees(repo)
    assert run_git(leg.path, "branch", "--show-current").strip() == "agent/ws-1"
    assert await workspaces.get("ws-1", scope=SCOPE) == record
    assert [r.id for r in await workspaces.list(scope=SCOPE)] == ["ws-1"]
    assert record.fence >= 1 and record.version >= 2  # intent, then open


async def test_create_again_returns_the_same_workspace(workspaces: Workspaces) -> None:
    first = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    again = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert again == first
    with pytest.raises(WorkspaceConflictError, match="already exists"):
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app", branch="other")])


async def test_cleanup_removes_the_worktree_and_an_unused_branch(
    workspaces: Workspaces, repo: Path
) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    closed = await workspaces.cleanup("ws-1", scope=SCOPE)
    assert closed.state == "closed" and closed.legs[0].state == "closed"
    assert not record.legs[0].path.exists()
    assert worktrees(repo) == {repo.resolve()}
    assert "agent/ws-1" not in branches(repo)
    assert await workspaces.cleanup("ws-1", scope=SCOPE) == closed  # idempotent


async def test_cleanup_keeps_a_branch_with_new_commits(workspaces: Workspaces, repo: Path) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    path = record.legs[0].path
    (path / "work.txt").write_text("done\n")
    run_git(path, "add", "work.txt")
    run_git(path, "commit", "-q", "-m", "work")
    await workspaces.cleanup("ws-1", scope=SCOPE)
    assert "agent/ws-1" in branches(repo)
    assert run_git(repo, "show", "agent/ws-1:work.txt") == "done\n"


async def test_a_dirty_worktree_is_refused_and_nothing_is_lost(workspaces: Workspaces) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    scratch = record.legs[0].path / "notes.txt"
    scratch.write_text("unsaved\n")
    with pytest.raises(WorkspaceDirtyError, match="'app' \\(1 changed paths\\)") as caught:
        await workspaces.cleanup("ws-1", scope=SCOPE)
    assert caught.value.code == "ERR_PRISM_WORKSPACE_DIRTY"
    assert scratch.read_text() == "unsaved\n"
    current = await workspaces.get("ws-1", scope=SCOPE)
    assert current is not None and current.state == "open"
    forced = await workspaces.cleanup("ws-1", scope=SCOPE, force=True)
    assert forced.state == "closed" and not scratch.exists()


async def test_the_cleanup_policy_can_allow_dirty_removal(
    tmp_path: Path, repo: Path, worktree_dir: Path
) -> None:
    workspaces = create_workspaces(
        worktree_roots={"app": repo},
        worktree_dir=worktree_dir,
        cleanup_policy=CleanupPolicy(allow_dirty=True),
    )
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    (record.legs[0].path / "notes.txt").write_text("scratch\n")
    assert (await workspaces.cleanup("ws-1", scope=SCOPE)).state == "closed"


async def test_other_scopes_can_neither_read_nor_write(workspaces: Workspaces) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    with pytest.raises(WorkspaceOwnershipError) as caught:
        await workspaces.get("ws-1", scope=OTHER)
    assert caught.value.code == "ERR_PRISM_WORKSPACE_OWNERSHIP"
    with pytest.raises(WorkspaceOwnershipError):
        await workspaces.cleanup("ws-1", scope=OTHER, force=True)
    with pytest.raises(WorkspaceOwnershipError):
        await workspaces.create("ws-1", scope=OTHER, legs=[LegRequest("app")])
    assert await workspaces.list(scope=OTHER) == []
    assert await workspaces.reconcile(scope=OTHER) == []
    assert record.legs[0].path.is_dir()
    assert await workspaces.get("ws-1", scope=SCOPE) == record


async def test_missing_worktree_roots_fail_closed(worktree_dir: Path) -> None:
    workspaces = create_workspaces(worktree_dir=worktree_dir)
    with pytest.raises(WorkspaceConfigError, match="no worktree_roots configured") as caught:
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert caught.value.code == "ERR_PRISM_WORKSPACE_CONFIG"
    assert not worktree_dir.exists()
    assert await workspaces.list(scope=SCOPE) == []


async def test_an_unknown_repository_id_is_refused(
    workspaces: Workspaces, worktree_dir: Path
) -> None:
    with pytest.raises(WorkspaceConfigError, match=r"'web' is not configured.*configured: app"):
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("web")])
    assert not worktree_dir.exists()
    assert await workspaces.get("ws-1", scope=SCOPE) is None


async def test_a_branch_that_already_exists_is_refused(
    workspaces: Workspaces, repo: Path, worktree_dir: Path
) -> None:
    run_git(repo, "branch", "agent/ws-1")
    with pytest.raises(WorkspaceConflictError, match="branch 'agent/ws-1' already exists"):
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert worktrees(repo) == {repo.resolve()}
    assert await workspaces.get("ws-1", scope=SCOPE) is None
    assert not (worktree_dir / "ws-1").exists()


@pytest.mark.parametrize(
    ("workspace_id", "branch", "match"),
    [("../up", None, "workspace id"), ("a/b", None, "workspace id"), ("ws", "bad..name", "branch")],
)
async def test_bad_ids_and_branches_are_refused(
    workspaces: Workspaces, workspace_id: str, branch: str | None, match: str
) -> None:
    with pytest.raises(WorkspaceConfigError, match=match):
        await workspaces.create(workspace_id, scope=SCOPE, legs=[LegRequest("app", branch)])


async def test_a_worktree_deleted_behind_the_records_back(
    workspaces: Workspaces, repo: Path
) -> None:
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    run_git(repo, "worktree", "remove", "--force", str(record.legs[0].path))
    with pytest.raises(WorkspaceMissingError, match="was deleted outside Prism") as caught:
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert caught.value.code == "ERR_PRISM_WORKSPACE_MISSING"
    closed = await workspaces.cleanup("ws-1", scope=SCOPE)  # converges
    assert closed.state == "closed"
    assert (await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])).state == "open"


async def test_a_partial_cleanup_is_unknown_and_converges_on_retry(
    tmp_path: Path, repo: Path, worktree_dir: Path
) -> None:
    web = make_repo(tmp_path / "web")
    workspaces = create_workspaces(
        tmp_path / "ws.db", worktree_roots={"app": repo, "web": web}, worktree_dir=worktree_dir
    )
    record = await workspaces.create(
        "ws-1", scope=SCOPE, legs=[LegRequest("app"), LegRequest("web")]
    )
    web_path = record.leg("web").path
    run_git(web, "worktree", "lock", str(web_path))  # git refuses to remove it
    with pytest.raises(WorkspaceGitError, match="stopped half way") as caught:
        await workspaces.cleanup("ws-1", scope=SCOPE)
    half = caught.value.record
    assert half is not None and half.state == "unknown"
    assert [leg.state for leg in half.legs] == ["closed", "unknown"]
    assert await workspaces.get("ws-1", scope=SCOPE) == half
    run_git(web, "worktree", "unlock", str(web_path))
    closed = await workspaces.cleanup("ws-1", scope=SCOPE)
    assert closed.state == "closed" and not web_path.exists()
    await workspaces.close()


async def test_a_held_lease_makes_mutations_busy(workspaces: Workspaces) -> None:
    await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    held = await workspaces.store.try_acquire("workspace/ws-1", scope=SCOPE, owner="other")
    assert held is not None
    with pytest.raises(WorkspaceBusyError, match="another worker"):
        await workspaces.cleanup("ws-1", scope=SCOPE)
    await workspaces.store.release(held)
    assert (await workspaces.cleanup("ws-1", scope=SCOPE)).state == "closed"


async def test_cleanup_of_an_unknown_id(workspaces: Workspaces) -> None:
    with pytest.raises(WorkspaceNotFoundError, match="no workspace 'nope'"):
        await workspaces.cleanup("nope", scope=SCOPE)


async def test_reconcile_after_a_restart(tmp_path: Path, repo: Path, worktree_dir: Path) -> None:
    db = tmp_path / "ws.db"
    before = create_workspaces(db, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    kept = await before.create("kept", scope=SCOPE, legs=[LegRequest("app")])
    gone = await before.create("gone", scope=SCOPE, legs=[LegRequest("app")])
    await before.close()
    # A crash between saving a create's intent and running git leaves an
    # "unknown" record whose worktree never appeared.
    store = before.store
    lease = await store.try_acquire("workspace/crashed", scope=SCOPE, owner="dead")
    assert lease is not None
    intent = kept.to_json() | {"id": "crashed", "state": "unknown"}
    intent["legs"] = [
        kept.legs[0].to_json() | {"state": "unknown", "path": str(worktree_dir / "crashed" / "app")}
    ]
    await store.save("workspace/crashed", intent, version=0, lease=lease)
    await store.release(lease)
    await store.close()
    run_git(repo, "worktree", "remove", str(gone.legs[0].path))

    after = create_workspaces(db, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    settled = {r.id: r.state for r in await after.reconcile(scope=SCOPE)}
    assert settled == {"kept": "open", "gone": "closed", "crashed": "closed"}
    assert {r.id: r.state for r in await after.list(scope=SCOPE)} == settled
    await after.close()


async def test_workspaces_on_postgres(pg_dsn: str, repo: Path, worktree_dir: Path) -> None:
    workspaces = create_workspaces(pg_dsn, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert record.state == "open" and record.legs[0].path.is_dir()
    with pytest.raises(WorkspaceOwnershipError):
        await workspaces.get("ws-1", scope=OTHER)
    assert await workspaces.list(scope=SCOPE) == [record]
    closed = await workspaces.cleanup("ws-1", scope=SCOPE)
    assert closed.state == "closed" and not record.legs[0].path.exists()
    await workspaces.close()


async def test_git_environment_overrides_do_not_redirect_commands(
    workspaces: Workspaces, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host running inside a git hook has GIT_DIR set to another
    repository; workspace commands still act on the configured root."""
    elsewhere = make_repo(tmp_path / "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    record = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    monkeypatch.delenv("GIT_DIR")
    assert record.legs[0].path.resolve() in worktrees(repo)
    assert "agent/ws-1" in branches(repo) and "agent/ws-1" not in branches(elsewhere)


async def test_two_hosts_on_one_store_do_not_mutate_one_workspace_at_once(
    tmp_path: Path, repo: Path, worktree_dir: Path
) -> None:
    db = tmp_path / "ws.db"
    one = create_workspaces(db, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    two = create_workspaces(db, worktree_roots={"app": repo}, worktree_dir=worktree_dir)
    await one.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    held = await one.store.try_acquire("workspace/ws-1", scope=SCOPE, owner=one.owner)
    assert held is not None  # one is in the middle of a change
    with pytest.raises(WorkspaceBusyError):
        await two.cleanup("ws-1", scope=SCOPE)
    await one.store.release(held)
    closed = await two.cleanup("ws-1", scope=SCOPE)
    assert closed.fence > held.token  # two's lease came after one's
    await one.close()
    await two.close()


async def test_a_failed_create_rolls_back_the_legs_it_added(
    tmp_path: Path, repo: Path, worktree_dir: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run_git(empty, "init", "-q", "-b", "main")  # no commit: nothing to branch from
    workspaces = create_workspaces(
        worktree_roots={"app": repo, "empty": empty}, worktree_dir=worktree_dir
    )
    with pytest.raises(WorkspaceGitError, match="creating workspace 'ws-1' failed") as caught:
        await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app"), LegRequest("empty")])
    record = caught.value.record
    assert record is not None and record.state == "closed"
    assert await workspaces.get("ws-1", scope=SCOPE) == record
    assert worktrees(repo) == {repo.resolve()}
    assert "agent/ws-1" not in branches(repo)
    again = await workspaces.create("ws-1", scope=SCOPE, legs=[LegRequest("app")])
    assert again.state == "open"
