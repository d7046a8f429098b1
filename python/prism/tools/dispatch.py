"""Tool dispatch: the one place a provider's tool call becomes an execution.

Order for one call (``dispatch_tool_call``):

1. shape, registry lookup, active filters, object arguments, JSON schema;
2. ``tool_call`` middleware (may rewrite name/arguments);
3. the same checks again on the rewritten call, then the permission policy;
4. execute (sync tools are called directly, async ones awaited); a typed
   tool's own argument validation failing (``ToolArgumentsError``) is an
   ``invalid_arguments`` result like a schema violation, and a tool's
   execution policy refusing (``ExecutionDeniedError``) a ``policy_denied`` one;
5. ``tool_result`` middleware on the result (errors included), with
   ``toolCallId`` pinned to the provider's call id.

A refused call (unknown, inactive, invalid, denied) never executes and becomes
an error result ``{"message": ..., "code": ...}``. Tool exceptions become
``tool_error`` results. Every message passes through the redactor, which also
knows each secret's repr- and JSON-escaped spelling (``unknown tool {name!r}``). Middleware
exceptions follow the registry's error policy (``"throw"`` propagates out of
dispatch). Cancellation always propagates.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Final, cast

import anyio

from prism.contracts import ToolCall, ToolResult
from prism.errors import ExecutionDeniedError
from prism.middleware import MiddlewareRegistry
from prism.security.approval import APPROVAL_REQUIRED, ApprovalRequiredError
from prism.security.limits import MAX_VALUE_DEPTH, describe_path, too_deep_path
from prism.security.permissions import PermissionPolicy, PermissionRequest, check_permission
from prism.security.redaction import SecretRedactor, require_redactor
from prism.tools.content import ToolOutput, image_blocks_problem
from prism.tools.definition import (
    ToolArgumentsError,
    ToolContext,
    ToolDefinition,
    ToolResultError,
)
from prism.tools.registry import ToolRegistry

UNKNOWN_TOOL: Final = "unknown_tool"
TOOL_NOT_ACTIVE: Final = "tool_not_active"
INVALID_TOOL_CALL: Final = "invalid_tool_call"
INVALID_ARGUMENTS: Final = "invalid_arguments"
PERMISSION_DENIED: Final = "permission_denied"
POLICY_DENIED: Final = "policy_denied"
TOOL_ERROR: Final = "tool_error"


def tool_error_result(call_id: str, name: str, message: str, code: str) -> ToolResult:
    return {
        "toolCallId": call_id,
        "name": name,
        "value": {"message": message, "code": code},
        "isError": True,
    }


class _Refused(Exception):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _check_call(registry: ToolRegistry, call: Any) -> tuple[ToolDefinition, dict[str, Any]]:
    """Everything that must hold before *and* after ``tool_call`` middleware."""
    if not isinstance(call, dict):
        raise _Refused(f"tool call must be a dict, got {type(call).__name__}", INVALID_TOOL_CALL)
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise _Refused("tool call needs a non-empty string name", INVALID_TOOL_CALL)
    definition = registry.get(name)
    if definition is None:
        raise _Refused(f"unknown tool {name!r}", UNKNOWN_TOOL)
    if not registry.is_active(name):
        raise _Refused(f"tool {name!r} is not active for this run", TOOL_NOT_ACTIVE)
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        raise _Refused(
            f"arguments for tool {name!r} must be an object, got {type(arguments).__name__}",
            INVALID_ARGUMENTS,
        )
    problem = definition.validate_arguments(arguments)
    if problem is not None:
        raise _Refused(problem, INVALID_ARGUMENTS)
    return definition, arguments


def _result_value_problem(name: str, value: Any, redactor: SecretRedactor) -> str | None:
    """Why ``value`` cannot be a stored tool result, or None.

    Checked here, at the edge, because a value the store cannot write would
    otherwise end the whole run when the result is appended; as a tool error
    the model sees what went wrong and the run goes on."""
    deep = too_deep_path(value)
    if deep is not None:
        # The same limit as for arguments: a value this deep could not be
        # redacted or stored.
        return (
            f"tool {name!r} returned a value nested deeper than {MAX_VALUE_DEPTH} "
            f"levels (at {describe_path(deep, redactor)})"
        )
    from prism._native import digest_value  # loaded on first dispatch, like the redactor

    try:
        # The native canonical encoder refuses exactly what the stores'
        # encoder refuses (non-str keys, NaN, unknown types, and a str with a
        # lone surrogate, which has no UTF-8 form) and names the path. The
        # digest itself is not needed; the walk costs about 2 ms per MB.
        digest_value(value)
    except (TypeError, ValueError) as error:
        reason = str(error)
        if len(reason) > 200:
            reason = reason[:197] + "..."
        return f"tool {name!r} returned a value that is not JSON: {reason}"
    return None


async def dispatch_tool_call(
    call: ToolCall,
    *,
    registry: ToolRegistry,
    context: ToolContext | None = None,
    middleware: MiddlewareRegistry | None = None,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
) -> ToolResult:
    """Run one provider tool call; see the module docstring for the order."""
    redactor = require_redactor(redactor, owner="dispatch_tool_call")
    raw_id = call.get("id") if isinstance(call, dict) else None
    call_id = raw_id if isinstance(raw_id, str) else ""
    raw_name = call.get("name") if isinstance(call, dict) else None
    name = raw_name if isinstance(raw_name, str) else ""
    result: ToolResult
    try:
        if not call_id:
            raise _Refused("tool call needs a non-empty string id", INVALID_TOOL_CALL)
        definition, arguments = _check_call(registry, call)
        if middleware is not None and middleware.has("tool_call"):
            # Middleware gets a copy so the provider's call (and the session's
            # stored assistant message) cannot be edited through it.
            current = await middleware.run("tool_call", copy.deepcopy(call))
            definition, arguments = _check_call(registry, current)
        name = definition.name
        await _check_tool_permission(permission_policy, name, arguments, context)
        tool_context = replace(context or ToolContext(), tool_call_id=call_id)
        result = await _execute(definition, arguments, tool_context, call_id, redactor)
    except _Refused as refused:
        result = tool_error_result(call_id, name, redactor.redact_text(str(refused)), refused.code)
    if middleware is not None:
        result = await _run_tool_result_middleware(middleware, result, call_id, name)
    return result


async def _check_tool_permission(
    policy: PermissionPolicy | None,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext | None,
) -> None:
    decision = await check_permission(
        policy,
        PermissionRequest(
            kind="tool",
            name=name,
            arguments=arguments,
            metadata=dict(context.metadata) if context is not None else {},
        ),
    )
    if not decision.allowed:
        reason = f": {decision.reason}" if decision.reason else ""
        raise _Refused(f"tool {name!r} denied by permission policy{reason}", PERMISSION_DENIED)


async def _execute(
    definition: ToolDefinition,
    arguments: dict[str, Any],
    tool_context: ToolContext,
    call_id: str,
    redactor: SecretRedactor,
) -> ToolResult:
    """The tool's result, or the tool error its failure (or a value that is
    not JSON) turns into, every message redacted."""
    name = definition.name

    def redact(text: str) -> str:
        return redactor.redact_text(text)

    try:
        # A shallow copy: a tool popping keys must not edit the stored call.
        value = definition.execute(dict(arguments), tool_context)
        if inspect.isawaitable(value):
            value = await value
    except ToolArgumentsError as error:
        return tool_error_result(call_id, name, redact(str(error)), INVALID_ARGUMENTS)
    except ApprovalRequiredError as error:
        # A human must decide first; a durable run pauses on this result
        # (prism.approvals), anything else reports it as a refusal.
        result = tool_error_result(call_id, name, redact(str(error)), APPROVAL_REQUIRED)
        result["value"]["approval"] = {
            "reason": redact(error.reason),
            "action": redactor.redact_value(error.action),
        }
        return result
    except ExecutionDeniedError as error:
        # The tool asked its execution policy before any side effect.
        return tool_error_result(call_id, name, redact(str(error)), POLICY_DENIED)
    except ToolResultError as error:
        return tool_error_result(call_id, name, redact(str(error)), TOOL_ERROR)
    except Exception as error:
        message = f"tool {name!r} failed: {type(error).__name__}: {error}"
        return tool_error_result(call_id, name, redact(message), TOOL_ERROR)
    images = None
    if isinstance(value, ToolOutput):
        value, images = value.value, value.images
    problem = _result_value_problem(name, value, redactor)
    if problem is None and images:
        problem = _image_problem(name, images, redactor)
    if problem is not None:
        return tool_error_result(call_id, name, redact(problem), TOOL_ERROR)
    done: ToolResult = {"toolCallId": call_id, "name": name, "value": value}
    if images:
        done["images"] = [image.to_block() for image in images]
    return done


def _image_problem(name: str, images: Sequence[Any], redactor: SecretRedactor) -> str | None:
    """Why the images cannot be sent, or None. Redaction would splice its
    mask into base64 that happened to contain a secret, leaving data no
    provider decodes; such an image is refused here instead (a real secret
    does not survive base64 encoding as itself, so only a contrived value
    trips this)."""
    for index, image in enumerate(images):
        if redactor.contains(image.base64_data):
            return (
                f"tool {name!r} returned image {index} whose base64 data contains a configured "
                "secret; not sent"
            )
    return None


async def _run_tool_result_middleware(
    middleware: MiddlewareRegistry, result: ToolResult, call_id: str, name: str
) -> ToolResult:
    updated = await middleware.run("tool_result", result)
    if not (isinstance(updated, dict) and "value" in updated):
        return tool_error_result(
            call_id,
            name,
            "tool_result middleware returned a non-result value",
            INVALID_TOOL_CALL,
        )
    if "images" in updated:
        problem = image_blocks_problem(updated["images"])
        if problem is not None:
            return tool_error_result(
                call_id, name, f"tool_result middleware returned bad images: {problem}", TOOL_ERROR
            )
    # The runtime pairs results with calls by id; middleware cannot re-pair them.
    updated["toolCallId"] = call_id
    if not isinstance(updated.get("name"), str):
        updated["name"] = name
    return updated


OnToolStart = Callable[[int, ToolCall], "Awaitable[None] | None"]
OnToolResult = Callable[[int, ToolResult], "Awaitable[None] | None"]
# Wraps one call's whole dispatch (middleware, permission, execution): a
# durable-execution engine runs it as a recorded step.
ExecuteCall = Callable[[ToolCall, Callable[[], "Awaitable[ToolResult]"]], "Awaitable[ToolResult]"]


async def _notify(callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    outcome = callback(*args)
    if inspect.isawaitable(outcome):
        await outcome


def _is_exclusive(registry: ToolRegistry, call: Any) -> bool:
    name = call.get("name") if isinstance(call, dict) else None
    definition = registry.get(name) if isinstance(name, str) else None
    return definition is not None and definition.exclusive


async def run_tool_calls(
    calls: Sequence[ToolCall],
    *,
    registry: ToolRegistry,
    context: ToolContext | None = None,
    concurrency: int = 1,
    middleware: MiddlewareRegistry | None = None,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
    on_start: OnToolStart | None = None,
    on_result: OnToolResult | None = None,
    execute_call: ExecuteCall | None = None,
) -> list[ToolResult]:
    """Dispatch ``calls`` with at most ``concurrency`` in flight; results come
    back in call order.

    A call whose tool (as the provider named it, before middleware) is
    ``exclusive`` runs alone: every earlier call finishes before it starts and
    no later call starts until it ends. ``on_start``/``on_result`` fire as
    each call starts and finishes (completion order), for event emission.
    ``execute_call(call, dispatch)``, when given, runs each call's dispatch
    (a durable-execution engine records it as a step). If one dispatch is cancelled or a callback raises, the others are
    cancelled and the exception propagates.
    """
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    results: list[ToolResult | None] = [None] * len(calls)

    async def run_one(index: int, limiter: anyio.CapacityLimiter | None) -> None:
        call = calls[index]
        if limiter is not None:
            async with limiter:
                await _run(index, call)
        else:
            await _run(index, call)

    async def _run(index: int, call: ToolCall) -> None:
        await _notify(on_start, index, call)

        def dispatch() -> Awaitable[ToolResult]:
            return dispatch_tool_call(
                call,
                registry=registry,
                context=context,
                middleware=middleware,
                permission_policy=permission_policy,
                redactor=redactor,
            )

        result = await (dispatch() if execute_call is None else execute_call(call, dispatch))
        results[index] = result
        await _notify(on_result, index, result)

    # Runs of shareable calls form one segment; each exclusive call is its own.
    segments: list[list[int]] = []
    current: list[int] = []
    for index, call in enumerate(calls):
        if _is_exclusive(registry, call):
            if current:
                segments.append(current)
                current = []
            segments.append([index])
        else:
            current.append(index)
    if current:
        segments.append(current)

    for segment in segments:
        if len(segment) == 1 or concurrency == 1:
            for index in segment:
                await run_one(index, None)
            continue
        limiter = anyio.CapacityLimiter(concurrency)
        async with anyio.create_task_group() as group:
            for index in segment:
                group.start_soon(run_one, index, limiter)
    return cast(list[ToolResult], results)
