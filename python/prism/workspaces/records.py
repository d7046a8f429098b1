"""Workspace records: what a workspace is, as saved in its checkpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from prism.workspaces.errors import WorkspaceConfigError
from prism.workspaces.scope import OwnershipScope

WorkspaceState = Literal["open", "unknown", "closed"]
"""``open``: every worktree exists; ``unknown``: an operation stopped half
way (a retry of ``cleanup`` or ``reconcile`` settles it); ``closed``: every
worktree is removed."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_id(value: object, what: str) -> str:
    # Ids become path components and branch names: no separators, no "..".
    if not isinstance(value, str) or not _ID.fullmatch(value) or ".." in value:
        raise WorkspaceConfigError(
            f"{what} must be 1-128 characters of letters, digits and . _ - (starting with a "
            f"letter or digit, no '..'), not {value!r}"
        )
    return value


@dataclass(frozen=True, slots=True)
class LegRequest:
    """One repository a workspace should get a worktree of. ``branch``
    defaults to ``agent/<workspace id>``."""

    repository_id: str
    branch: str | None = None


@dataclass(frozen=True, slots=True)
class CleanupPolicy:
    """What ``cleanup`` may do beyond removing clean worktrees.

    ``allow_dirty``: remove worktrees with uncommitted or untracked changes
    (they are lost) instead of refusing. ``delete_unused_branches``: delete a
    leg's branch when it still points at the commit it was created from
    (nothing would be lost); a branch with new commits is always kept.
    """

    allow_dirty: bool = False
    delete_unused_branches: bool = True


@dataclass(frozen=True, slots=True)
class WorkspaceLeg:
    """One repository's worktree in a workspace."""

    repository_id: str
    branch: str
    path: Path
    base: str
    """The commit the branch was created from."""
    state: WorkspaceState = "open"

    def to_json(self) -> dict[str, Any]:
        return {
            "repositoryId": self.repository_id,
            "branch": self.branch,
            "path": str(self.path),
            "base": self.base,
            "state": self.state,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkspaceLeg:
        return cls(
            repository_id=str(data["repositoryId"]),
            branch=str(data["branch"]),
            path=Path(str(data["path"])),
            base=str(data["base"]),
            state=cast(WorkspaceState, data["state"]),
        )


@dataclass(frozen=True, slots=True)
class WorkspaceRecord:
    """A workspace as last saved. ``version`` and ``fence`` are the
    checkpoint's version and the fencing token of the lease it was saved
    under."""

    id: str
    scope: OwnershipScope
    state: WorkspaceState
    legs: tuple[WorkspaceLeg, ...]
    created_at: str
    updated_at: str
    version: int = 0
    fence: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "legs": [leg.to_json() for leg in self.legs],
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, scope: OwnershipScope, version: int, fence: int
    ) -> WorkspaceRecord:
        return cls(
            id=str(data["id"]),
            scope=scope,
            state=cast(WorkspaceState, data["state"]),
            legs=tuple(WorkspaceLeg.from_json(leg) for leg in data["legs"]),
            created_at=str(data["createdAt"]),
            updated_at=str(data["updatedAt"]),
            version=version,
            fence=fence,
            metadata=dict(data.get("metadata") or {}),
        )

    def leg(self, repository_id: str) -> WorkspaceLeg:
        for leg in self.legs:
            if leg.repository_id == repository_id:
                return leg
        raise KeyError(repository_id)
