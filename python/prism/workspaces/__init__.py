"""Workspaces: git worktrees per task over host-approved repositories, with
ownership scopes, fenced leases and versioned checkpoints (docs/workspaces.md).

``create_workspaces(store, worktree_roots=..., worktree_dir=...)`` gives a
:class:`Workspaces`; every mutation runs under a lease whose fencing token
each checkpoint save checks, so a worker whose lease lapsed or was taken over
is refused with ``WorkspaceFenceError`` instead of overwriting newer state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.workspaces.backends import (
        create_fenced_store,
    )
    from prism.workspaces.errors import (
        ERR_WORKSPACE,
        ERR_WORKSPACE_BUSY,
        ERR_WORKSPACE_CONFIG,
        ERR_WORKSPACE_CONFLICT,
        ERR_WORKSPACE_DIRTY,
        ERR_WORKSPACE_FENCE,
        ERR_WORKSPACE_GIT,
        ERR_WORKSPACE_MISSING,
        ERR_WORKSPACE_NOT_FOUND,
        ERR_WORKSPACE_OWNERSHIP,
        ERR_WORKSPACE_STORE,
        WorkspaceBusyError,
        WorkspaceConfigError,
        WorkspaceConflictError,
        WorkspaceDirtyError,
        WorkspaceError,
        WorkspaceFenceError,
        WorkspaceGitError,
        WorkspaceMissingError,
        WorkspaceNotFoundError,
        WorkspaceOwnershipError,
        WorkspaceStoreError,
    )
    from prism.workspaces.fencing import (
        DEFAULT_LEASE_TTL,
        MAX_LEASE_TTL,
        Checkpoint,
        CheckpointStore,
        FencedStore,
        Lease,
        LeaseStore,
    )
    from prism.workspaces.manager import (
        Workspaces,
        create_workspaces,
    )
    from prism.workspaces.memory import (
        MemoryFencedStore,
    )
    from prism.workspaces.records import (
        CleanupPolicy,
        LegRequest,
        WorkspaceLeg,
        WorkspaceRecord,
        WorkspaceState,
    )
    from prism.workspaces.scope import (
        OwnershipScope,
    )
    from prism.workspaces.sqlite import (
        SqliteFencedStore,
    )

_EXPORTS: dict[str, str] = {
    "create_fenced_store": "prism.workspaces.backends",
    "ERR_WORKSPACE": "prism.workspaces.errors",
    "ERR_WORKSPACE_BUSY": "prism.workspaces.errors",
    "ERR_WORKSPACE_CONFIG": "prism.workspaces.errors",
    "ERR_WORKSPACE_CONFLICT": "prism.workspaces.errors",
    "ERR_WORKSPACE_DIRTY": "prism.workspaces.errors",
    "ERR_WORKSPACE_FENCE": "prism.workspaces.errors",
    "ERR_WORKSPACE_GIT": "prism.workspaces.errors",
    "ERR_WORKSPACE_MISSING": "prism.workspaces.errors",
    "ERR_WORKSPACE_NOT_FOUND": "prism.workspaces.errors",
    "ERR_WORKSPACE_OWNERSHIP": "prism.workspaces.errors",
    "ERR_WORKSPACE_STORE": "prism.workspaces.errors",
    "WorkspaceBusyError": "prism.workspaces.errors",
    "WorkspaceConfigError": "prism.workspaces.errors",
    "WorkspaceConflictError": "prism.workspaces.errors",
    "WorkspaceDirtyError": "prism.workspaces.errors",
    "WorkspaceError": "prism.workspaces.errors",
    "WorkspaceFenceError": "prism.workspaces.errors",
    "WorkspaceGitError": "prism.workspaces.errors",
    "WorkspaceMissingError": "prism.workspaces.errors",
    "WorkspaceNotFoundError": "prism.workspaces.errors",
    "WorkspaceOwnershipError": "prism.workspaces.errors",
    "WorkspaceStoreError": "prism.workspaces.errors",
    "DEFAULT_LEASE_TTL": "prism.workspaces.fencing",
    "MAX_LEASE_TTL": "prism.workspaces.fencing",
    "Checkpoint": "prism.workspaces.fencing",
    "CheckpointStore": "prism.workspaces.fencing",
    "FencedStore": "prism.workspaces.fencing",
    "Lease": "prism.workspaces.fencing",
    "LeaseStore": "prism.workspaces.fencing",
    "Workspaces": "prism.workspaces.manager",
    "create_workspaces": "prism.workspaces.manager",
    "MemoryFencedStore": "prism.workspaces.memory",
    "CleanupPolicy": "prism.workspaces.records",
    "LegRequest": "prism.workspaces.records",
    "WorkspaceLeg": "prism.workspaces.records",
    "WorkspaceRecord": "prism.workspaces.records",
    "WorkspaceState": "prism.workspaces.records",
    "OwnershipScope": "prism.workspaces.scope",
    "SqliteFencedStore": "prism.workspaces.sqlite",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_LEASE_TTL",
    "ERR_WORKSPACE",
    "ERR_WORKSPACE_BUSY",
    "ERR_WORKSPACE_CONFIG",
    "ERR_WORKSPACE_CONFLICT",
    "ERR_WORKSPACE_DIRTY",
    "ERR_WORKSPACE_FENCE",
    "ERR_WORKSPACE_GIT",
    "ERR_WORKSPACE_MISSING",
    "ERR_WORKSPACE_NOT_FOUND",
    "ERR_WORKSPACE_OWNERSHIP",
    "ERR_WORKSPACE_STORE",
    "MAX_LEASE_TTL",
    "Checkpoint",
    "CheckpointStore",
    "CleanupPolicy",
    "FencedStore",
    "Lease",
    "LeaseStore",
    "LegRequest",
    "MemoryFencedStore",
    "OwnershipScope",
    "SqliteFencedStore",
    "WorkspaceBusyError",
    "WorkspaceConfigError",
    "WorkspaceConflictError",
    "WorkspaceDirtyError",
    "WorkspaceError",
    "WorkspaceFenceError",
    "WorkspaceGitError",
    "WorkspaceLeg",
    "WorkspaceMissingError",
    "WorkspaceNotFoundError",
    "WorkspaceOwnershipError",
    "WorkspaceRecord",
    "WorkspaceState",
    "WorkspaceStoreError",
    "Workspaces",
    "create_fenced_store",
    "create_workspaces",
]
