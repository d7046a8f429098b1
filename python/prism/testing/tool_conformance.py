"""Tool conformance: dispatch refuses a call for each blocked reason, and the
tool's own code never runs for the reasons dispatch decides.

``await assert_tool_dispatch_conforms(tool, valid_arguments=..., ...)``
dispatches the tool through ``prism.tools.dispatch_tool_call`` under each
condition and checks the error code:

| reason | how it is provoked | expected code |
| --- | --- | --- |
| unknown | a call naming a tool that is not registered | ``unknown_tool`` |
| inactive | the tool registered but filtered out | ``tool_not_active`` |
| invalid arguments | ``invalid_arguments`` given | ``invalid_arguments`` |
| permission denied | a deny-all ``PermissionPolicy`` | ``permission_denied`` |
| middleware rename | ``tool_call`` middleware renames the call to an inactive tool | ``tool_not_active`` |
| middleware arguments | ``tool_call`` middleware breaks the arguments | ``invalid_arguments`` |
| policy denied | ``policy_denied_arguments`` (the tool's execution policy refuses them) | ``policy_denied`` |

For every reason but the last, the tool's ``execute`` is wrapped and must
not be called. For ``policy_denied`` the tool runs (it asks its policy
inside), so pass ``side_effect=`` (a callable returning whether anything
happened) to check that nothing did.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from prism.contracts import ToolResult
from prism.middleware import create_middleware_registry
from prism.security.permissions import create_deny_all_policy
from prism.security.redaction import SecretRedactor
from prism.tools.definition import ToolContext, ToolDefinition
from prism.tools.dispatch import dispatch_tool_call
from prism.tools.registry import create_tool_registry

_DECOY = "conformance_decoy_tool"


def _counting(tool: ToolDefinition, calls: list[int]) -> ToolDefinition:
    original = tool.execute

    def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        calls.append(1)
        return original(args, ctx)

    return replace(tool, execute=execute)


def _expect(result: ToolResult, code: str, reason: str) -> None:
    value = result.get("value")
    got = value.get("code") if isinstance(value, Mapping) else None
    if not result.get("isError") or got != code:
        raise AssertionError(
            f"{reason}: expected an error result with code {code!r}, got {result!r}"
        )


async def assert_tool_dispatch_conforms(
    tool: ToolDefinition,
    *,
    valid_arguments: Mapping[str, Any],
    invalid_arguments: Mapping[str, Any] | None = None,
    policy_denied_arguments: Mapping[str, Any] | None = None,
    side_effect: Callable[[], bool] | None = None,
    context: ToolContext | None = None,
    redactor: SecretRedactor,
) -> dict[str, ToolResult]:
    """Check every blocked reason (see the module docstring); returns the
    error result of each, by reason. Raises ``AssertionError`` naming the
    reason that did not hold. ``redactor`` is the agent's, as dispatch gets
    it in a run (``NOOP_REDACTOR`` said explicitly where no secret is
    configured)."""
    calls: list[int] = []
    counted = _counting(tool, calls)
    decoy = ToolDefinition(_DECOY, lambda args, ctx: calls.append(1))
    ctx = context or ToolContext(session_id="conformance", run_id="conformance")
    results: dict[str, ToolResult] = {}

    async def blocked(
        reason: str, code: str, name: str, arguments: Mapping[str, Any], **kw: Any
    ) -> None:
        before = len(calls)
        registry = kw.pop("registry", create_tool_registry([counted, decoy], deny=[_DECOY]))
        result = await dispatch_tool_call(
            _call(name, arguments), registry=registry, context=ctx, redactor=redactor, **kw
        )
        _expect(result, code, reason)
        if len(calls) != before:
            raise AssertionError(f"{reason}: the tool ran although dispatch refused the call")
        results[reason] = result

    await blocked("unknown", "unknown_tool", tool.name + "_missing", valid_arguments)
    await blocked(
        "inactive",
        "tool_not_active",
        tool.name,
        valid_arguments,
        registry=create_tool_registry([counted], deny=[tool.name]),
    )
    if invalid_arguments is not None:
        await blocked("invalid_arguments", "invalid_arguments", tool.name, invalid_arguments)
    await blocked(
        "permission_denied",
        "permission_denied",
        tool.name,
        valid_arguments,
        permission_policy=create_deny_all_policy("conformance"),
    )
    rename = create_middleware_registry()
    rename.use("tool_call", lambda value, next: next({**value, "name": _DECOY}))
    await blocked(
        "middleware_rename", "tool_not_active", tool.name, valid_arguments, middleware=rename
    )
    if invalid_arguments is not None:
        breaking = create_middleware_registry()
        broken = dict(invalid_arguments)
        breaking.use("tool_call", lambda value, next: next({**value, "arguments": broken}))
        await blocked(
            "middleware_arguments",
            "invalid_arguments",
            tool.name,
            valid_arguments,
            middleware=breaking,
        )
    if policy_denied_arguments is not None:
        results["policy_denied"] = await _policy_denied(
            tool, policy_denied_arguments, ctx, redactor, side_effect
        )
    return results


def _call(name: str, arguments: Mapping[str, Any]) -> Any:
    return {"id": "conformance-call", "name": name, "arguments": copy.deepcopy(dict(arguments))}


async def _policy_denied(
    tool: ToolDefinition,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    redactor: SecretRedactor,
    side_effect: Callable[[], bool] | None,
) -> ToolResult:
    """The tool itself refuses (its execution policy), with no side effect."""
    result = await dispatch_tool_call(
        _call(tool.name, arguments),
        registry=create_tool_registry([tool]),
        context=ctx,
        redactor=redactor,
    )
    _expect(result, "policy_denied", "policy_denied")
    if side_effect is not None and side_effect():
        raise AssertionError("policy_denied: the refused call had a side effect")
    return result
