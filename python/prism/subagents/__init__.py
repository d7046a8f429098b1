"""Sub-agents: a supervisor the model delegates tasks to (docs/subagents.md).

``create_supervisor(children={"explorer": ChildSpec(create_agent=...)})``
gives a delegation tool (``supervisor.tool``); each call runs a named child
agent as a session of its own on the parent's store, linked to the parent's
session and tool call, in parallel up to ``max_concurrency``, each under its
``Budget``. A child waiting for approval pauses the parent on that call; a
resumed parent resumes its children from their own checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.subagents.errors import (
        DelegationRejectedError,
        SubagentAbortedError,
        SubagentError,
        SubagentFailedError,
        UnknownChildError,
    )
    from prism.subagents.records import (
        delegation_id_for,
    )
    from prism.subagents.spec import (
        Budget,
        ChildContext,
        ChildSpec,
        DelegationOutcome,
        SupervisorHooks,
    )
    from prism.subagents.supervisor import (
        Supervisor,
        create_supervisor,
    )
    from prism.subagents.worktree import (
        WorktreeChildFactory,
        create_worktree_child_factory,
    )

_EXPORTS: dict[str, str] = {
    "DelegationRejectedError": "prism.subagents.errors",
    "SubagentAbortedError": "prism.subagents.errors",
    "SubagentError": "prism.subagents.errors",
    "SubagentFailedError": "prism.subagents.errors",
    "UnknownChildError": "prism.subagents.errors",
    "delegation_id_for": "prism.subagents.records",
    "Budget": "prism.subagents.spec",
    "ChildContext": "prism.subagents.spec",
    "ChildSpec": "prism.subagents.spec",
    "DelegationOutcome": "prism.subagents.spec",
    "SupervisorHooks": "prism.subagents.spec",
    "Supervisor": "prism.subagents.supervisor",
    "create_supervisor": "prism.subagents.supervisor",
    "WorktreeChildFactory": "prism.subagents.worktree",
    "create_worktree_child_factory": "prism.subagents.worktree",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "Budget",
    "ChildContext",
    "ChildSpec",
    "DelegationOutcome",
    "DelegationRejectedError",
    "SubagentAbortedError",
    "SubagentError",
    "SubagentFailedError",
    "Supervisor",
    "SupervisorHooks",
    "UnknownChildError",
    "WorktreeChildFactory",
    "create_supervisor",
    "create_worktree_child_factory",
    "delegation_id_for",
]
