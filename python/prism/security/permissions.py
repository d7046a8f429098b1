"""Permission policies: hard guards for tools, extensions and resources.

A policy is consulted by the code that is about to act (tool dispatch after
``tool_call`` middleware, the extension kernel, resource loaders). Middleware
can transform payloads but can never turn a denial into an execution.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

PermissionKind = Literal["tool", "extension", "resource"]


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    kind: PermissionKind
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    allowed: bool
    reason: str = ""


@runtime_checkable
class PermissionPolicy(Protocol):
    def check(
        self, request: PermissionRequest
    ) -> PermissionDecision | bool | Awaitable[PermissionDecision | bool]: ...


async def check_permission(
    policy: PermissionPolicy | None, request: PermissionRequest
) -> PermissionDecision:
    """Ask ``policy``; no policy allows. A policy that raises denies (fail closed)."""
    if policy is None:
        return PermissionDecision(True)
    try:
        outcome: Any = policy.check(request)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as error:
        return PermissionDecision(False, f"permission policy failed: {type(error).__name__}")
    if isinstance(outcome, PermissionDecision):
        return outcome
    if isinstance(outcome, bool):
        return PermissionDecision(outcome, "" if outcome else "denied by policy")
    return PermissionDecision(False, "permission policy returned a non-decision")
