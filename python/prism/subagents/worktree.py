"""Children in git worktrees of their own (``create_worktree_child_factory``).

Wraps a child's agent factory: before the child exists, its workspace is
created (``prism.workspaces``: one ``git worktree add`` on branch
``agent/<delegation id>``, no clone) and the factory gets ``ctx.cwd`` = the
worktree, so coding tools built from it are rooted there and cannot reach
the main checkout. The ``after`` hook removes the worktree once the
delegation is terminal; a suspended child keeps it, and a resumed child gets
the identical workspace back (the workspace id is the delegation id).
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from prism.errors import ConfigError
from prism.runtime import Agent
from prism.subagents.spec import AfterHook, ChildAgentFactory, ChildContext, DelegationOutcome
from prism.workspaces import LegRequest, OwnershipScope, Workspaces

if TYPE_CHECKING:
    from prism.workspaces import WorkspaceRecord

__all__ = ["WorktreeChildFactory", "create_worktree_child_factory"]


class WorktreeChildFactory:
    """``create_agent`` for a ``ChildSpec`` and ``after`` for the
    supervisor's hooks (both needed: ``after`` is what cleans up)."""

    def __init__(
        self,
        factory: ChildAgentFactory,
        *,
        workspaces: Workspaces,
        repository_id: str,
        branch: str | None,
        scope: OwnershipScope,
        force_cleanup: bool,
        then: AfterHook | None,
    ) -> None:
        self.factory = factory
        self.workspaces = workspaces
        self.repository_id = repository_id
        self.branch = branch
        self.scope = scope
        self.force_cleanup = force_cleanup
        self._then = then
        self._cleaned: set[str] = set()

    async def workspace(self, ctx: ChildContext) -> WorkspaceRecord:
        """The delegation's workspace: created, or the same one returned
        for a resumed child (its worktree must still exist)."""
        return await self.workspaces.create(
            ctx.delegation_id,
            scope=self.scope,
            legs=[LegRequest(self.repository_id, self.branch)],
            metadata={
                "delegationId": ctx.delegation_id,
                "child": ctx.child,
                "parentSessionId": ctx.parent_session_id,
            },
        )

    async def create_agent(self, ctx: ChildContext) -> Agent:
        # Fails closed before the child exists: an unknown repository, no
        # worktree_roots, a branch that already exists (a pre-spawn rejection).
        record = await self.workspace(ctx)
        made = self.factory(replace(ctx, cwd=Path(record.legs[0].path)))
        if inspect.isawaitable(made):
            made = await made
        if not isinstance(made, Agent):
            raise ConfigError(f"the wrapped factory returned {type(made).__name__}, not an Agent")
        return made

    async def after(self, outcome: DelegationOutcome) -> None:
        """Remove the delegation's worktree (once), then the host's hook.
        A dirty worktree is refused unless ``force_cleanup`` or the
        workspaces' cleanup policy allows it; the refusal is reported on
        the delegation's result (``hookError``) and the worktree kept."""
        try:
            if self._then is not None:
                value = self._then(outcome)
                if inspect.isawaitable(value):
                    await value
        finally:
            await self._cleanup(outcome.delegation_id)

    async def _cleanup(self, delegation_id: str) -> None:
        if delegation_id in self._cleaned:
            return
        record = await self.workspaces.get(delegation_id, scope=self.scope)
        if record is not None and record.state != "closed":
            await self.workspaces.cleanup(delegation_id, scope=self.scope, force=self.force_cleanup)
        self._cleaned.add(delegation_id)


def create_worktree_child_factory(
    factory: ChildAgentFactory,
    *,
    workspaces: Workspaces,
    repository_id: str,
    branch: str | None = None,
    scope: OwnershipScope | None = None,
    force_cleanup: bool = False,
    after: AfterHook | None = None,
) -> WorktreeChildFactory:
    """Isolate a child in a git worktree of ``repository_id`` (one of the
    workspaces' host-approved ``worktree_roots``) on ``branch`` (default
    ``agent/<delegation id>``). Use ``.create_agent`` in the ``ChildSpec``
    and ``.after`` as the supervisor's ``after`` hook; ``after=`` chains the
    host's own hook. ``scope`` is the workspaces' ownership scope (default
    tenant ``"default"``)."""
    if not callable(factory):
        raise ConfigError("create_worktree_child_factory needs a factory (ChildContext -> Agent)")
    if not isinstance(workspaces, Workspaces):
        raise ConfigError("workspaces must be a prism.workspaces.Workspaces (create_workspaces)")
    if not isinstance(repository_id, str) or not repository_id:
        raise ConfigError("repository_id must name one of the workspaces' worktree_roots")
    if branch is not None and (not isinstance(branch, str) or not branch):
        raise ConfigError("branch must be a non-empty string or None (agent/<delegation id>)")
    if scope is not None and not isinstance(scope, OwnershipScope):
        raise ConfigError("scope must be a prism.workspaces.OwnershipScope")
    if after is not None and not callable(after):
        raise ConfigError("after must be callable")
    return WorktreeChildFactory(
        factory,
        workspaces=workspaces,
        repository_id=repository_id,
        branch=branch,
        scope=scope or OwnershipScope(tenant="default"),
        force_cleanup=bool(force_cleanup),
        then=after,
    )
