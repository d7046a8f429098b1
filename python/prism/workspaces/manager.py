"""``Workspaces``: git worktrees per task, recorded under fenced leases.

Each workspace is one checkpoint (key ``workspace/<id>``) written only under
that key's lease, so two hosts or processes never both mutate a workspace,
and one whose lease lapsed mid-operation is refused before it overwrites the
other's record. Git work happens between saves: the intent is saved first
(state ``unknown``), so a crash at any point leaves a record that
``reconcile`` or ``cleanup`` can settle.
"""

from __future__ import annotations

import builtins
import os
import socket
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from prism._clock import utc_timestamp
from prism.workspaces import git
from prism.workspaces.backends import create_fenced_store
from prism.workspaces.errors import (
    WorkspaceBusyError,
    WorkspaceConfigError,
    WorkspaceConflictError,
    WorkspaceDirtyError,
    WorkspaceGitError,
    WorkspaceMissingError,
    WorkspaceNotFoundError,
)
from prism.workspaces.fencing import DEFAULT_LEASE_TTL, FencedStore, Lease, check_ttl
from prism.workspaces.records import (
    CleanupPolicy,
    LegRequest,
    WorkspaceLeg,
    WorkspaceRecord,
    WorkspaceState,
    check_id,
)
from prism.workspaces.scope import OwnershipScope, check_scope

KEY_PREFIX = "workspace/"


def workspace_key(workspace_id: str) -> str:
    return KEY_PREFIX + workspace_id


def _overall(legs: Sequence[WorkspaceLeg]) -> WorkspaceState:
    states = {leg.state for leg in legs}
    if states == {"open"}:
        return "open"
    if states == {"closed"}:
        return "closed"
    return "unknown"


class Workspaces:
    """Create, find and clean up workspaces (see :func:`create_workspaces`)."""

    def __init__(
        self,
        store: FencedStore,
        *,
        worktree_roots: Mapping[str, Path],
        worktree_dir: Path | None,
        cleanup_policy: CleanupPolicy,
        lease_ttl: float,
    ) -> None:
        self.store = store
        self.worktree_roots = dict(worktree_roots)
        self.worktree_dir = worktree_dir
        self.cleanup_policy = cleanup_policy
        self.lease_ttl = lease_ttl
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    # --- reads --------------------------------------------------------------

    async def get(self, workspace_id: str, *, scope: OwnershipScope) -> WorkspaceRecord | None:
        """The record as last saved, or None. A record of another scope
        raises ``WorkspaceOwnershipError``. No git command runs."""
        check_id(workspace_id, "workspace id")
        check_scope(scope)
        found = await self.store.load(workspace_key(workspace_id), scope=scope)
        if found is None:
            return None
        return WorkspaceRecord.from_json(
            found.data, scope=scope, version=found.version, fence=found.fence
        )

    async def list(self, *, scope: OwnershipScope) -> list[WorkspaceRecord]:
        """Every record of ``scope`` (other scopes' records are not listed)."""
        check_scope(scope)
        found = await self.store.list(scope=scope, prefix=KEY_PREFIX)
        return [
            WorkspaceRecord.from_json(c.data, scope=scope, version=c.version, fence=c.fence)
            for c in found
        ]

    # --- create ---------------------------------------------------------------

    async def create(
        self,
        workspace_id: str,
        *,
        scope: OwnershipScope,
        legs: Sequence[LegRequest],
        metadata: Mapping[str, Any] | None = None,
    ) -> WorkspaceRecord:
        """One ``git worktree add`` per leg (no clone), on a new branch
        (``agent/<workspace id>`` by default) from the repository's HEAD.

        Creating an id whose record is open with the same legs returns it
        unchanged (a resumed task gets its workspace back), after checking
        its worktrees still exist (``WorkspaceMissingError`` if not).
        """
        check_id(workspace_id, "workspace id")
        check_scope(scope)
        planned = await self._plan(workspace_id, legs)
        async with self._leased(workspace_id, scope) as lease:
            existing = await self.get(workspace_id, scope=scope)
            if existing is not None and existing.state != "closed":
                return await self._existing(existing, planned)
            for leg in planned:
                await self._check_free(leg)
            now = utc_timestamp()
            record = WorkspaceRecord(
                id=workspace_id,
                scope=scope,
                state="unknown",
                legs=tuple(replace(leg, state="unknown") for leg in planned),
                created_at=now,
                updated_at=now,
                version=0 if existing is None else existing.version,
                metadata=dict(metadata or {}),
            )
            record = await self._save(record, lease)
            return await self._add_worktrees(record, lease)

    async def _plan(
        self, workspace_id: str, legs: Sequence[LegRequest]
    ) -> builtins.list[WorkspaceLeg]:
        if not self.worktree_roots:
            raise WorkspaceConfigError(
                "no worktree_roots configured: workspaces fail closed until the host approves "
                "each repository (create_workspaces(worktree_roots={'id': path}))"
            )
        if self.worktree_dir is None:
            raise WorkspaceConfigError(
                "no worktree_dir configured: workspaces need a directory for their worktrees"
            )
        if isinstance(legs, LegRequest) or not legs:
            raise WorkspaceConfigError("legs must be a non-empty list of LegRequest")
        planned: builtins.list[WorkspaceLeg] = []
        for request in legs:
            if not isinstance(request, LegRequest):
                raise WorkspaceConfigError(f"legs must hold LegRequest items, not {request!r}")
            repository_id = check_id(request.repository_id, "repository id")
            if repository_id not in self.worktree_roots:
                known = ", ".join(sorted(self.worktree_roots))
                raise WorkspaceConfigError(
                    f"repository id {repository_id!r} is not configured in worktree_roots "
                    f"(configured: {known})"
                )
            if any(leg.repository_id == repository_id for leg in planned):
                raise WorkspaceConfigError(f"repository id {repository_id!r} is listed twice")
            root = self.worktree_roots[repository_id]
            if not await git.is_repository(root):
                raise WorkspaceConfigError(
                    f"worktree root {repository_id!r} ({root}) is not a git checkout"
                )
            branch = request.branch if request.branch is not None else f"agent/{workspace_id}"
            if not isinstance(branch, str) or not await git.valid_branch_name(root, branch):
                raise WorkspaceConfigError(f"{branch!r} is not a valid git branch name")
            path = self.worktree_dir / workspace_id / repository_id
            planned.append(WorkspaceLeg(repository_id, branch, path, base=""))
        return planned

    async def _existing(
        self, existing: WorkspaceRecord, planned: Sequence[WorkspaceLeg]
    ) -> WorkspaceRecord:
        wanted = [(leg.repository_id, leg.branch) for leg in planned]
        have = [(leg.repository_id, leg.branch) for leg in existing.legs]
        if existing.state != "open" or wanted != have:
            raise WorkspaceConflictError(
                f"workspace {existing.id!r} already exists (state {existing.state!r}, legs "
                f"{have}); clean it up first or use another id"
            )
        for leg in existing.legs:
            registered = await git.registered_worktrees(self.worktree_roots[leg.repository_id])
            if not leg.path.is_dir() or leg.path.resolve() not in registered:
                raise WorkspaceMissingError(
                    f"the worktree of workspace {existing.id!r}, repository "
                    f"{leg.repository_id!r} at {str(leg.path)!r} was deleted outside Prism; "
                    f"its branch {leg.branch!r} still holds its commits. Run cleanup (it "
                    "converges) and create the workspace again."
                )
        return existing

    async def _check_free(self, leg: WorkspaceLeg) -> None:
        root = self.worktree_roots[leg.repository_id]
        if await git.branch_exists(root, leg.branch):
            raise WorkspaceConflictError(
                f"branch {leg.branch!r} already exists in repository {leg.repository_id!r}; "
                "nothing was created (pass another branch, or delete it if it is unused)"
            )
        if leg.path.exists():
            raise WorkspaceConflictError(
                f"the worktree path {str(leg.path)!r} already exists; nothing was created"
            )

    async def _add_worktrees(self, record: WorkspaceRecord, lease: Lease) -> WorkspaceRecord:
        legs = list(record.legs)
        for index, leg in enumerate(legs):
            root = self.worktree_roots[leg.repository_id]
            try:
                base = await git.head_commit(root)
                leg.path.parent.mkdir(parents=True, exist_ok=True)
                await git.git_ok(
                    root,
                    "worktree", "add", "-b", leg.branch, str(leg.path), base,
                    doing=f"adding the worktree of {leg.repository_id!r}",
                )  # fmt: skip
            except (WorkspaceGitError, OSError) as exc:
                undone = await self._roll_back(legs[:index])
                never_added = [replace(leg, state="closed") for leg in legs[index:]]
                after = [*undone, *never_added]
                failed = replace(record, legs=tuple(after), state=_overall(after))
                saved = await self._save(failed, lease)
                raise WorkspaceGitError(
                    f"creating workspace {record.id!r} failed: {exc}", record=saved
                ) from None
            legs[index] = replace(leg, base=base, state="open")
            lease = await self.store.renew(lease, ttl=self.lease_ttl)
        return await self._save(replace(record, legs=tuple(legs), state="open"), lease)

    async def _roll_back(self, legs: Sequence[WorkspaceLeg]) -> builtins.list[WorkspaceLeg]:
        undone = []
        for leg in legs:
            try:
                await self._remove_leg(leg, force=True, delete_branch=True)
                undone.append(replace(leg, state="closed"))
            except WorkspaceGitError:
                undone.append(replace(leg, state="unknown"))
        return undone

    # --- cleanup --------------------------------------------------------------

    async def cleanup(
        self, workspace_id: str, *, scope: OwnershipScope, force: bool = False
    ) -> WorkspaceRecord:
        """Remove every worktree of the workspace. A worktree with changes is
        refused (``WorkspaceDirtyError``, nothing removed) unless ``force``
        or the cleanup policy allows it. A leg that fails leaves the record
        ``unknown`` (``WorkspaceGitError`` carries it); calling cleanup again
        converges to ``closed``. A worktree already deleted from disk is
        pruned from git and counts as removed."""
        check_id(workspace_id, "workspace id")
        check_scope(scope)
        async with self._leased(workspace_id, scope) as lease:
            record = await self.get(workspace_id, scope=scope)
            if record is None:
                raise WorkspaceNotFoundError(f"no workspace {workspace_id!r} in this scope")
            if record.state == "closed":
                return record
            allow_dirty = force or self.cleanup_policy.allow_dirty
            if not allow_dirty:
                await self._refuse_dirty(record)
            legs, failures = [], []
            for leg in record.legs:
                if leg.state == "closed":
                    legs.append(leg)
                    continue
                try:
                    await self._remove_leg(
                        leg,
                        force=allow_dirty,
                        delete_branch=self.cleanup_policy.delete_unused_branches,
                    )
                    legs.append(replace(leg, state="closed"))
                except WorkspaceGitError as exc:
                    legs.append(replace(leg, state="unknown"))
                    failures.append(f"{leg.repository_id!r}: {exc}")
                lease = await self.store.renew(lease, ttl=self.lease_ttl)
            saved = await self._save(replace(record, legs=tuple(legs), state=_overall(legs)), lease)
            if failures:
                raise WorkspaceGitError(
                    f"cleanup of workspace {workspace_id!r} stopped half way (state 'unknown'; "
                    f"call cleanup again to converge): {'; '.join(failures)}",
                    record=saved,
                )
            return saved

    async def _refuse_dirty(self, record: WorkspaceRecord) -> None:
        dirty = []
        for leg in record.legs:
            if leg.state != "closed" and leg.path.is_dir():
                changed = await git.changes(leg.path)
                if changed:
                    dirty.append(f"{leg.repository_id!r} ({len(changed)} changed paths)")
        if dirty:
            raise WorkspaceDirtyError(
                f"workspace {record.id!r} has uncommitted changes in {', '.join(dirty)}; nothing "
                "was removed. Commit or extract them, or clean up with force=True / "
                "CleanupPolicy(allow_dirty=True) to discard them."
            )

    async def _remove_leg(self, leg: WorkspaceLeg, *, force: bool, delete_branch: bool) -> None:
        root = self.worktree_roots.get(leg.repository_id)
        if root is None:
            raise WorkspaceGitError(
                f"repository id {leg.repository_id!r} is no longer in worktree_roots"
            )
        if leg.path.exists():
            args = ["worktree", "remove", *(["--force"] if force else []), str(leg.path)]
            await git.git_ok(root, *args, doing=f"removing the worktree at {str(leg.path)!r}")
        else:
            await git.git_ok(root, "worktree", "prune", doing="pruning deleted worktrees")
        if delete_branch and leg.base:
            # Only while the branch still points at its base: update-ref
            # compares and deletes atomically, so new commits are never lost.
            tip = await git.branch_tip(root, leg.branch)
            if tip == leg.base:
                await git.git(root, "update-ref", "-d", f"refs/heads/{leg.branch}", leg.base)

    # --- reconcile ------------------------------------------------------------

    async def reconcile(self, *, scope: OwnershipScope) -> builtins.list[WorkspaceRecord]:
        """After a host restart: compare every open or ``unknown`` record of
        ``scope`` with the disk and save what is true (a leg whose worktree
        exists is ``open``, one whose worktree is gone is ``closed``).
        Records another worker holds the lease on are returned unchanged."""
        check_scope(scope)
        settled = []
        for record in await self.list(scope=scope):
            if record.state == "closed":
                settled.append(record)
                continue
            try:
                async with self._leased(record.id, scope) as lease:
                    current = await self.get(record.id, scope=scope)
                    assert current is not None  # records are never deleted
                    settled.append(await self._reconcile_one(current, lease))
            except WorkspaceBusyError:
                settled.append(record)
        return settled

    async def _reconcile_one(self, record: WorkspaceRecord, lease: Lease) -> WorkspaceRecord:
        legs = []
        for leg in record.legs:
            root = self.worktree_roots.get(leg.repository_id)
            if root is None or leg.state == "closed":
                legs.append(leg)
                continue
            await git.git(root, "worktree", "prune")
            registered = await git.registered_worktrees(root)
            present = leg.path.is_dir() and leg.path.resolve() in registered
            if present and not leg.base:
                leg = replace(leg, base=(await git.branch_tip(root, leg.branch)) or "")
            legs.append(replace(leg, state="open" if present else "closed"))
        updated = replace(record, legs=tuple(legs), state=_overall(legs))
        if updated == record:
            return record
        return await self._save(updated, lease)

    # --- leases and saves -----------------------------------------------------

    @asynccontextmanager
    async def _leased(self, workspace_id: str, scope: OwnershipScope) -> AsyncIterator[Lease]:
        lease = await self.store.try_acquire(
            workspace_key(workspace_id), scope=scope, owner=self.owner, ttl=self.lease_ttl
        )
        if lease is None:
            raise WorkspaceBusyError(
                f"workspace {workspace_id!r} is being changed by another worker (its lease is "
                "held); nothing was done. Try again when it is released or expires."
            )
        try:
            yield lease
        finally:
            await self.store.release(lease)

    async def _save(self, record: WorkspaceRecord, lease: Lease) -> WorkspaceRecord:
        record = replace(record, updated_at=utc_timestamp())
        saved = await self.store.save(
            workspace_key(record.id), record.to_json(), version=record.version, lease=lease
        )
        return replace(record, version=saved.version, fence=saved.fence)

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> Workspaces:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def create_workspaces(
    store: str | os.PathLike[str] | FencedStore | None = None,
    *,
    worktree_roots: Mapping[str, str | os.PathLike[str]] | None = None,
    worktree_dir: str | os.PathLike[str] | None = None,
    cleanup_policy: CleanupPolicy | None = None,
    lease_ttl: float = DEFAULT_LEASE_TTL,
) -> Workspaces:
    """Workspaces over git checkouts the host approved.

    ``store``: None (memory), a SQLite file path, a PostgreSQL DSN, or a
    ready ``FencedStore``. ``worktree_roots``: repository id -> the git
    checkout worktrees are added from; without it every ``create`` fails
    closed. ``worktree_dir``: where worktrees go
    (``<worktree_dir>/<workspace id>/<repository id>``)."""
    if worktree_roots is not None and not isinstance(worktree_roots, Mapping):
        raise WorkspaceConfigError("worktree_roots must map repository ids to checkout paths")
    roots = {
        check_id(repository_id, "repository id"): Path(path).resolve()
        for repository_id, path in (worktree_roots or {}).items()
    }
    policy = cleanup_policy if cleanup_policy is not None else CleanupPolicy()
    if not isinstance(policy, CleanupPolicy):
        raise WorkspaceConfigError("cleanup_policy must be a CleanupPolicy")
    if store is None or isinstance(store, str | os.PathLike):
        fenced = create_fenced_store(None if store is None else str(store))
    else:
        fenced = store
    return Workspaces(
        fenced,
        worktree_roots=roots,
        worktree_dir=None if worktree_dir is None else Path(worktree_dir).resolve(),
        cleanup_policy=policy,
        lease_ttl=check_ttl(lease_ttl),
    )
