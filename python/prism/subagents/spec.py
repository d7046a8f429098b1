"""What a supervisor is configured with and what its hooks see."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prism.errors import ConfigError

if TYPE_CHECKING:
    from prism.runtime import Agent

__all__ = [
    "Budget",
    "ChildContext",
    "ChildSpec",
    "DelegationOutcome",
    "SupervisorHooks",
    "TerminalOutcome",
]

TerminalOutcome = Literal["success", "failure", "abort", "rejected"]


def _positive(name: str, value: float | None, *, integer: bool) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"Budget.{name} must be a positive number or None, got {value!r}")
    if integer and not isinstance(value, int):
        raise ConfigError(f"Budget.{name} must be a positive integer or None, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"Budget.{name} must be positive, got {value!r}")


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits of one child (``None``: unlimited).

    ``max_tool_rounds`` bounds the child's run like ``max_tool_rounds`` does
    any run; ``max_tokens`` (input + output, summed over its provider
    turns) and ``max_wall_seconds`` abort the child once crossed (per
    attempt: a resumed child starts its clock again). ``max_delegations``
    is the supervisor's: how many children one parent run may start."""

    max_tool_rounds: int | None = None
    max_tokens: int | None = None
    max_wall_seconds: float | None = None
    max_delegations: int | None = None

    def __post_init__(self) -> None:
        _positive("max_tool_rounds", self.max_tool_rounds, integer=True)
        _positive("max_tokens", self.max_tokens, integer=True)
        _positive("max_wall_seconds", self.max_wall_seconds, integer=False)
        _positive("max_delegations", self.max_delegations, integer=True)


@dataclass(frozen=True, slots=True)
class ChildContext:
    """What a child's agent factory is called with.

    ``session_id`` is the child's session on the parent's ``store``; it is
    derived from ``delegation_id``, itself a pure function of the parent's
    session, run and tool call, so a resumed delegation (``resumed=True``)
    gets the same ids. ``cwd`` is set by a wrapping factory that gives the
    child a directory of its own (``create_worktree_child_factory``)."""

    delegation_id: str
    child: str
    task: str
    session_id: str
    parent_session_id: str
    parent_run_id: str | None
    tool_call_id: str
    store: Any
    resumed: bool = False
    cwd: Path | None = None


ChildAgentFactory = Callable[[ChildContext], "Agent | Awaitable[Agent]"]


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One entry of the supervisor's catalog: how to make the child's agent
    (called once per delegation, and again when it resumes), what the model
    reads about it, and its own budget (else the supervisor's)."""

    create_agent: ChildAgentFactory
    description: str = ""
    budget: Budget | None = None

    def __post_init__(self) -> None:
        if not callable(self.create_agent):
            raise ConfigError("ChildSpec.create_agent must be callable (ChildContext -> Agent)")
        if not isinstance(self.description, str):
            raise ConfigError("ChildSpec.description must be a string")
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise ConfigError("ChildSpec.budget must be a Budget or None")


@dataclass(frozen=True, slots=True)
class DelegationOutcome:
    """A delegation's terminal outcome, as the ``after`` hook sees it (once).

    ``text`` is the child's whole answer (success); ``reason`` why it did
    not succeed. ``context`` is None for a rejection before the factory ran.
    """

    delegation_id: str
    child: str
    outcome: TerminalOutcome
    tool_call_id: str
    parent_session_id: str
    session_id: str | None = None
    text: str = ""
    reason: str = ""
    usage: Mapping[str, Any] = field(default_factory=dict)
    tool_rounds: int = 0
    context: ChildContext | None = None


AfterHook = Callable[[DelegationOutcome], "Awaitable[None] | None"]


@dataclass(frozen=True, slots=True)
class SupervisorHooks:
    """``after`` runs once per delegation when it reaches a terminal outcome
    (success, failure, abort, pre-spawn rejection); never for a child that
    is suspended waiting for approval (it runs when the resumed child ends).
    An ``after`` that raises is reported on the parent's tool result, never
    run twice."""

    after: AfterHook | None = None

    def __post_init__(self) -> None:
        if self.after is not None and not callable(self.after):
            raise ConfigError("SupervisorHooks.after must be callable")
