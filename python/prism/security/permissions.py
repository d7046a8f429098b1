"""Permission policies: hard guards for tools, extensions and resources.

A policy is consulted by the code that is about to act (tool dispatch after
``tool_call`` middleware, the extension kernel, resource loaders). Middleware
can transform payloads but can never turn a denial into an execution.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from prism.errors import ConfigError, PermissionDeniedError
from prism.security.resource_names import ResourceNameError, normalize_resource_uri

PermissionKind = Literal["tool", "extension", "resource", "command"]
PERMISSION_KINDS: frozenset[str] = frozenset(get_args(PermissionKind))


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


async def require_permission(
    policy: PermissionPolicy | None, request: PermissionRequest
) -> PermissionDecision:
    """Like ``check_permission`` but raise ``PermissionDeniedError`` on denial."""
    decision = await check_permission(policy, request)
    if not decision.allowed:
        reason = decision.reason or "denied by policy"
        raise PermissionDeniedError(
            f"{request.kind} {request.name!r} is not permitted: {reason}",
            kind=request.kind,
            name=request.name,
        )
    return decision


def _compile_patterns(
    kind: str, patterns: Iterable[str] | None
) -> tuple[set[str], tuple[str, ...]]:
    if patterns is None:
        return set(), ()
    if isinstance(patterns, str):
        raise ConfigError(f"{kind} allowlist must be a list of names, not a single string")
    exact: set[str] = set()
    prefixes: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(f"{kind} allowlist entries must be non-empty strings")
        if pattern.endswith("*"):
            prefixes.append(_canonical_pattern(kind, pattern[:-1], prefix=True))
        elif "*" in pattern:
            raise ConfigError(
                f"{kind} allowlist pattern {pattern!r}: '*' is only allowed at the end"
            )
        else:
            exact.add(_canonical_pattern(kind, pattern, prefix=False))
    return exact, tuple(prefixes)


def _canonical_pattern(kind: str, pattern: str, *, prefix: bool) -> str:
    """Resource patterns are matched in the canonical URI form (see
    prism.security.resource_names); other kinds are plain names."""
    if kind != "resource" or not pattern:
        return pattern
    if prefix and pattern.endswith("://") and "/" not in pattern[:-3]:
        return pattern.lower()  # "pkg://*": every URI of a scheme
    try:
        canonical = normalize_resource_uri(pattern)
    except ResourceNameError as error:
        raise ConfigError(f"resource allowlist pattern {pattern!r}: {error}") from None
    if prefix and pattern.endswith("/") and not canonical.endswith("/"):
        canonical += "/"
    return canonical


@dataclass(frozen=True, slots=True)
class AllowlistPolicy:
    """Deny by default: a request is allowed only when its kind has an
    allowlist and the name matches an entry exactly, or starts with an
    entry's prefix when the entry ends in ``*`` (``"file:///data/*"``).

    Resource names and resource patterns are compared in canonical form
    (percent-decoded, dot segments resolved, duplicate slashes removed; see
    :mod:`prism.security.resource_names`); a URI whose ``..`` climbs above
    its root is denied whatever the list says."""

    rules: Mapping[str, tuple[frozenset[str], tuple[str, ...]]]

    def check(self, request: PermissionRequest) -> PermissionDecision:
        rule = self.rules.get(request.kind)
        if rule is None:
            return PermissionDecision(False, f"no {request.kind} is allowed by this policy")
        exact, prefixes = rule
        name = request.name
        if request.kind == "resource":
            try:
                name = normalize_resource_uri(name)
            except ResourceNameError as error:
                return PermissionDecision(False, str(error))
        if name in exact or any(name.startswith(prefix) for prefix in prefixes):
            return PermissionDecision(True, "allowlisted")
        return PermissionDecision(False, f"{request.kind} is not on the allowlist")


def create_allowlist_policy(
    *,
    tools: Iterable[str] | None = None,
    extensions: Iterable[str] | None = None,
    resources: Iterable[str] | None = None,
    commands: Iterable[str] | None = None,
) -> AllowlistPolicy:
    """Allow only the listed names; a kind left as ``None`` is denied entirely.
    Pass ``["*"]`` to allow every name of a kind."""
    rules: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
    for kind, patterns in (
        ("tool", tools),
        ("extension", extensions),
        ("resource", resources),
        ("command", commands),
    ):
        if patterns is not None:
            exact, prefixes = _compile_patterns(kind, patterns)
            rules[kind] = (frozenset(exact), prefixes)
    return AllowlistPolicy(rules)


_ALLOWLIST_JSON_KEYS = ("tools", "extensions", "resources", "commands")


def allowlist_policy_from_json(value: Any) -> AllowlistPolicy:
    """Build an allowlist from config data such as
    ``{"tools": ["read"], "extensions": ["*"]}``; a missing kind is denied.
    Unknown keys and non-list values are refused (``ConfigError``)."""
    if not isinstance(value, Mapping):
        raise ConfigError("permissions must be an object of allowlists")
    unknown = sorted(str(key) for key in value if key not in _ALLOWLIST_JSON_KEYS)
    if unknown:
        raise ConfigError(
            f"permissions has unknown keys: {', '.join(unknown)}; "
            f"expected {', '.join(_ALLOWLIST_JSON_KEYS)}"
        )
    for key in _ALLOWLIST_JSON_KEYS:
        if key in value and not isinstance(value[key], list):
            raise ConfigError(f"permissions.{key} must be an array of names")
    return create_allowlist_policy(
        tools=value.get("tools"),
        extensions=value.get("extensions"),
        resources=value.get("resources"),
        commands=value.get("commands"),
    )


@dataclass(frozen=True, slots=True)
class _ConstantPolicy:
    allowed: bool
    reason: str

    def check(self, request: PermissionRequest) -> PermissionDecision:
        return PermissionDecision(self.allowed, self.reason)


def create_deny_all_policy(reason: str = "denied by default") -> PermissionPolicy:
    """Deny everything: a starting point for hosts that grant explicitly."""
    return _ConstantPolicy(False, reason)


def create_allow_all_policy() -> PermissionPolicy:
    """Allow everything; the same as passing no policy, but explicit."""
    return _ConstantPolicy(True, "allowed")


@dataclass(frozen=True, slots=True)
class _AllOfPolicy:
    policies: tuple[PermissionPolicy, ...]

    async def check(self, request: PermissionRequest) -> PermissionDecision:
        for policy in self.policies:
            decision = await check_permission(policy, request)
            if not decision.allowed:
                return decision
        return PermissionDecision(True, "allowed by every policy")


def combine_policies(*policies: PermissionPolicy) -> PermissionPolicy:
    """Every policy must allow; the first denial (in order) wins."""
    if not policies:
        raise ConfigError("combine_policies needs at least one policy")
    return _AllOfPolicy(tuple(policies))


def policy_from_function(
    check: Callable[
        [PermissionRequest], PermissionDecision | bool | Awaitable[PermissionDecision | bool]
    ],
) -> PermissionPolicy:
    """Wrap a plain function as a ``PermissionPolicy``."""

    @dataclass(frozen=True, slots=True)
    class _FunctionPolicy:
        fn: Callable[
            [PermissionRequest], PermissionDecision | bool | Awaitable[PermissionDecision | bool]
        ]

        def check(
            self, request: PermissionRequest
        ) -> PermissionDecision | bool | Awaitable[PermissionDecision | bool]:
            return self.fn(request)

    return _FunctionPolicy(check)
