"""Ownership scopes: who a workspace, lease or checkpoint belongs to."""

from __future__ import annotations

import json
from dataclasses import dataclass

from prism.workspaces.errors import WorkspaceConfigError, WorkspaceOwnershipError

_MAX_PART = 256


def _check_part(name: str, value: str | None, *, required: bool) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or not value or len(value) > _MAX_PART:
        need = "a non-empty string" if required else "None or a non-empty string"
        raise WorkspaceConfigError(
            f"OwnershipScope.{name} must be {need} of at most {_MAX_PART} characters"
        )


@dataclass(frozen=True, slots=True)
class OwnershipScope:
    """Tenant, account and user a record is read and written under. Two
    scopes match only when all three parts are equal: ``account=None`` is its
    own scope, not a wildcard."""

    tenant: str
    account: str | None = None
    user: str | None = None

    def __post_init__(self) -> None:
        _check_part("tenant", self.tenant, required=True)
        _check_part("account", self.account, required=False)
        _check_part("user", self.user, required=False)

    def encode(self) -> str:
        """The text a store keeps and compares (JSON: no separator ambiguity)."""
        return json.dumps([self.tenant, self.account, self.user], separators=(",", ":"))

    def describe(self) -> str:
        parts = [f"tenant={self.tenant!r}"]
        if self.account is not None:
            parts.append(f"account={self.account!r}")
        if self.user is not None:
            parts.append(f"user={self.user!r}")
        return ", ".join(parts)


def check_scope(scope: object) -> OwnershipScope:
    if not isinstance(scope, OwnershipScope):
        raise WorkspaceConfigError(f"scope must be an OwnershipScope, not {type(scope).__name__}")
    return scope


def ownership_error(what: str, key: str, scope: OwnershipScope) -> WorkspaceOwnershipError:
    # The other scope is not named: that would leak who owns the key.
    return WorkspaceOwnershipError(
        f"{what} {key!r} belongs to another ownership scope than ({scope.describe()}); "
        "it was neither read nor changed"
    )
