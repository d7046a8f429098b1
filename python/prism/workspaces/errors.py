"""The workspace errors: one base, one stable ``ERR_PRISM_WORKSPACE*`` code
per way a workspace operation can be refused (docs/workspaces.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism.errors import PrismError

if TYPE_CHECKING:
    from prism.workspaces.records import WorkspaceRecord

ERR_WORKSPACE = "ERR_PRISM_WORKSPACE"
ERR_WORKSPACE_CONFIG = "ERR_PRISM_WORKSPACE_CONFIG"
ERR_WORKSPACE_OWNERSHIP = "ERR_PRISM_WORKSPACE_OWNERSHIP"
ERR_WORKSPACE_FENCE = "ERR_PRISM_WORKSPACE_FENCE"
ERR_WORKSPACE_BUSY = "ERR_PRISM_WORKSPACE_BUSY"
ERR_WORKSPACE_CONFLICT = "ERR_PRISM_WORKSPACE_CONFLICT"
ERR_WORKSPACE_NOT_FOUND = "ERR_PRISM_WORKSPACE_NOT_FOUND"
ERR_WORKSPACE_MISSING = "ERR_PRISM_WORKSPACE_MISSING"
ERR_WORKSPACE_DIRTY = "ERR_PRISM_WORKSPACE_DIRTY"
ERR_WORKSPACE_GIT = "ERR_PRISM_WORKSPACE_GIT"
ERR_WORKSPACE_STORE = "ERR_PRISM_WORKSPACE_STORE"


class WorkspaceError(PrismError):
    """A workspace, lease or checkpoint operation was refused or failed."""

    code = ERR_WORKSPACE


class WorkspaceConfigError(WorkspaceError, ValueError):
    """What the host configured or passed cannot work: no ``worktree_roots``,
    an unknown repository id, an invalid id, branch or TTL."""

    code = ERR_WORKSPACE_CONFIG


class WorkspaceOwnershipError(WorkspaceError):
    """A record, lease or checkpoint belongs to another ownership scope."""

    code = ERR_WORKSPACE_OWNERSHIP


class WorkspaceFenceError(WorkspaceError):
    """A write under a lease that lapsed or was taken over (its fencing token
    is no longer the newest), or against a version that is no longer current."""

    code = ERR_WORKSPACE_FENCE


class WorkspaceBusyError(WorkspaceError):
    """Another worker holds the workspace's lease right now."""

    code = ERR_WORKSPACE_BUSY


class WorkspaceConflictError(WorkspaceError):
    """The workspace id, branch or worktree path is already taken."""

    code = ERR_WORKSPACE_CONFLICT


class WorkspaceNotFoundError(WorkspaceError, KeyError):
    """No workspace record has that id."""

    code = ERR_WORKSPACE_NOT_FOUND

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class WorkspaceMissingError(WorkspaceError):
    """A recorded worktree is gone from disk (deleted behind the record's back)."""

    code = ERR_WORKSPACE_MISSING


class WorkspaceDirtyError(WorkspaceError):
    """Cleanup refused: a worktree has changes that removal would lose."""

    code = ERR_WORKSPACE_DIRTY


class WorkspaceGitError(WorkspaceError):
    """A git command failed; ``record`` is the record as saved afterwards
    (state ``unknown`` after a partial failure: retrying converges)."""

    code = ERR_WORKSPACE_GIT

    def __init__(self, message: str, *, record: WorkspaceRecord | None = None) -> None:
        super().__init__(message)
        self.record = record


class WorkspaceStoreError(WorkspaceError):
    """The lease and checkpoint database could not be read or written."""

    code = ERR_WORKSPACE_STORE
