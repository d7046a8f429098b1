"""The errors a delegation ends with (drawn in prism/errors.py's tree).

Inside a run the delegation tool raises them and dispatch hands their
message to the model as a tool error, so the parent run goes on."""

from __future__ import annotations

from prism.errors import PrismError

__all__ = [
    "DelegationRejectedError",
    "SubagentAbortedError",
    "SubagentError",
    "SubagentFailedError",
    "UnknownChildError",
]


class SubagentError(PrismError):
    """A delegation to a sub-agent did not end with its answer."""

    code = "subagent_error"


class DelegationRejectedError(SubagentError):
    """Refused before the child existed: over the concurrency or delegation
    limit, or its agent factory failed. Nothing was stored for the child."""

    code = "delegation_rejected"


class UnknownChildError(DelegationRejectedError):
    """The model named a child the supervisor does not have; the message
    lists the names it has."""

    code = "unknown_child"


class SubagentFailedError(SubagentError):
    """The child's run failed (a provider error, too many tool rounds, ...)."""

    code = "subagent_failed"


class SubagentAbortedError(SubagentError):
    """The child's run was aborted: the supervisor's ``abort``, its token or
    wall-time budget."""

    code = "subagent_aborted"
