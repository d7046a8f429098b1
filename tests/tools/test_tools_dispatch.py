from __future__ import annotations

from typing import Any

import anyio
import pytest

from prism.contracts import ToolCall
from prism.errors import ConfigError
from prism.middleware import create_middleware_registry
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.permissions import PermissionDecision, PermissionRequest
from prism.tools import (
    ToolContext,
    create_tool_registry,
    define_tool,
    dispatch_tool_call,
    tool,
)

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], ToolContext]] = []

    def tool(self, name: str, **kwargs: Any) -> Any:
        def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
            self.calls.append((name, args, ctx))
            return {"ok": name}

        return define_tool(name, execute, **kwargs)


def call(name: str, arguments: Any = None, id: str = "c1") -> ToolCall:
    return {"id": id, "name": name, "arguments": {} if arguments is None else arguments}


@pytest.mark.anyio
async def test_executes_with_context_carrying_the_call_id() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read", parameters=SCHEMA)])
    result = await dispatch_tool_call(
        call("read", {"path": "a.md"}),
        registry=registry,
        context=ToolContext(session_id="s1", run_id="r1", metadata={"k": 1}),
        redactor=NOOP_REDACTOR,
    )
    assert result == {"toolCallId": "c1", "name": "read", "value": {"ok": "read"}}
    name, args, ctx = rec.calls[0]
    assert (name, args) == ("read", {"path": "a.md"})
    assert (ctx.session_id, ctx.run_id, ctx.tool_call_id, dict(ctx.metadata)) == (
        "s1",
        "r1",
        "c1",
        {"k": 1},
    )


@pytest.mark.anyio
async def test_async_tool_is_awaited() -> None:
    @tool
    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        """Waits a tick."""
        await anyio.lowlevel.checkpoint()
        return "later"

    result = await dispatch_tool_call(
        call("slow"), registry=create_tool_registry([slow]), redactor=NOOP_REDACTOR
    )
    assert result["value"] == "later" and "isError" not in result


@pytest.mark.anyio
async def test_schema_errors_never_echo_argument_values() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read", parameters=SCHEMA)])
    secret = "sk-canary-0123456789"
    for arguments in ({"path": 7, "limit": secret}, {"path": secret, "limit": secret}):
        result = await dispatch_tool_call(
            call("read", arguments), registry=registry, redactor=NOOP_REDACTOR
        )
        assert result["value"]["code"] == "invalid_arguments"
        assert secret not in result["value"]["message"]
    assert rec.calls == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("the_call", "code", "message"),
    [
        (call("nope"), "unknown_tool", "unknown tool 'nope'"),
        (call("hidden"), "tool_not_active", "tool 'hidden' is not active"),
        (call("read", [1, 2]), "invalid_arguments", "must be an object, got list"),
        (call("read", "path=a"), "invalid_arguments", "must be an object, got str"),
        (call("read", {}), "invalid_arguments", """args fails 'required' ["path"]"""),
        (call("read", {"path": 3}), "invalid_arguments", "args.path fails 'type' \"string\""),
        (
            call("read", {"path": "a", "limit": 0}),
            "invalid_arguments",
            "args.limit fails 'minimum' 1",
        ),
        (call("read", {"path": "a", "x": 1}), "invalid_arguments", "'additionalProperties' false"),
        ({"id": "c1", "name": 5, "arguments": {}}, "invalid_tool_call", "non-empty string name"),
        ({"id": "", "name": "read", "arguments": {}}, "invalid_tool_call", "non-empty string id"),
        ("read", "invalid_tool_call", "non-empty string id"),
    ],
)
async def test_refused_calls_become_error_results_and_never_execute(
    the_call: Any, code: str, message: str
) -> None:
    rec = Recorder()
    registry = create_tool_registry(
        [rec.tool("read", parameters=SCHEMA), rec.tool("hidden")], deny=["hidden"]
    )
    result = await dispatch_tool_call(the_call, registry=registry, redactor=NOOP_REDACTOR)
    assert result["isError"] is True
    assert result["value"]["code"] == code
    assert message in result["value"]["message"]
    assert rec.calls == []


@pytest.mark.anyio
async def test_middleware_renaming_to_a_denied_tool_is_refused() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read"), rec.tool("rm")], deny=["rm"])
    middleware = create_middleware_registry()
    middleware.use("tool_call", lambda value, next: next({**value, "name": "rm"}))
    result = await dispatch_tool_call(
        call("read"), registry=registry, middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert result["value"]["code"] == "tool_not_active"
    assert result["toolCallId"] == "c1"
    assert rec.calls == []


@pytest.mark.anyio
async def test_middleware_renaming_to_an_unknown_tool_or_bad_args_is_refused() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read", parameters=SCHEMA)])
    rename = create_middleware_registry()
    rename.use("tool_call", lambda value, next: next({**value, "name": "shell"}))
    result = await dispatch_tool_call(
        call("read", {"path": "a"}), registry=registry, middleware=rename, redactor=NOOP_REDACTOR
    )
    assert result["value"]["code"] == "unknown_tool"
    bad_args = create_middleware_registry()
    bad_args.use("tool_call", lambda value, next: next({**value, "arguments": {"path": 1}}))
    result = await dispatch_tool_call(
        call("read", {"path": "a"}), registry=registry, middleware=bad_args, redactor=NOOP_REDACTOR
    )
    assert result["value"]["code"] == "invalid_arguments"
    not_a_call = create_middleware_registry()
    not_a_call.use("tool_call", lambda value, next: "rm -rf /")
    result = await dispatch_tool_call(
        call("read", {"path": "a"}),
        registry=registry,
        middleware=not_a_call,
        redactor=NOOP_REDACTOR,
    )
    assert result["value"]["code"] == "invalid_tool_call"
    assert rec.calls == []


@pytest.mark.anyio
async def test_middleware_may_rewrite_arguments_of_an_allowed_call() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read", parameters=SCHEMA)])
    middleware = create_middleware_registry()
    middleware.use("tool_call", lambda value, next: next({**value, "arguments": {"path": "b"}}))
    original = call("read", {"path": "a"})
    await dispatch_tool_call(
        original, registry=registry, middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert rec.calls[0][1] == {"path": "b"}
    assert original["arguments"] == {"path": "a"}  # the provider's call is not mutated


@pytest.mark.anyio
async def test_permission_policy_is_checked_after_middleware() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read"), rec.tool("write")])
    seen: list[PermissionRequest] = []

    class Policy:
        def check(self, request: PermissionRequest) -> PermissionDecision:
            seen.append(request)
            return PermissionDecision(request.name != "write", "writes need approval")

    middleware = create_middleware_registry()
    middleware.use("tool_call", lambda value, next: next({**value, "name": "write"}))
    result = await dispatch_tool_call(
        call("read", {"a": 1}),
        registry=registry,
        middleware=middleware,
        permission_policy=Policy(),
        context=ToolContext(metadata={"user": "u1"}),
        redactor=NOOP_REDACTOR,
    )
    assert result["value"] == {
        "message": "tool 'write' denied by permission policy: writes need approval",
        "code": "permission_denied",
    }
    assert seen[0].kind == "tool" and seen[0].name == "write"
    assert dict(seen[0].arguments) == {"a": 1} and dict(seen[0].metadata) == {"user": "u1"}
    assert rec.calls == []


@pytest.mark.anyio
async def test_a_raising_permission_policy_denies() -> None:
    rec = Recorder()

    class Broken:
        def check(self, request: PermissionRequest) -> bool:
            raise RuntimeError("db down")

    result = await dispatch_tool_call(
        call("read"),
        registry=create_tool_registry([rec.tool("read")]),
        permission_policy=Broken(),
        redactor=NOOP_REDACTOR,
    )
    assert result["value"]["code"] == "permission_denied"
    assert rec.calls == []


@pytest.mark.anyio
async def test_tool_exception_becomes_redacted_error_result() -> None:
    secret = "sk-test-0123456789abcdef"

    def explode(args: dict[str, Any], ctx: ToolContext) -> None:
        raise RuntimeError(f"auth failed with key {secret}")

    result = await dispatch_tool_call(
        call("explode"),
        registry=create_tool_registry([define_tool("explode", explode)]),
        redactor=create_redactor([secret]),
    )
    assert result == {
        "toolCallId": "c1",
        "name": "explode",
        "value": {
            "message": "tool 'explode' failed: RuntimeError: auth failed with key [REDACTED]",
            "code": "tool_error",
        },
        "isError": True,
    }
    assert secret not in repr(result)


@pytest.mark.anyio
async def test_tool_exception_with_native_redactor() -> None:
    import prism._native as native

    secret = "sk-native-0123456789"

    def explode(args: dict[str, Any], ctx: ToolContext) -> None:
        raise ValueError(secret)

    result = await dispatch_tool_call(
        call("explode"),
        registry=create_tool_registry([define_tool("explode", explode)]),
        redactor=native.Redactor([secret]),
    )
    assert secret not in repr(result)


@pytest.mark.anyio
async def test_tool_result_middleware_sees_results_but_cannot_repair_ids() -> None:
    rec = Recorder()
    registry = create_tool_registry([rec.tool("read")])
    seen: list[Any] = []

    async def observe(value: Any, next: Any) -> Any:
        seen.append(value)
        return await next({**value, "toolCallId": "forged", "value": "patched"})

    middleware = create_middleware_registry()
    middleware.use("tool_result", observe)
    result = await dispatch_tool_call(
        call("read"), registry=registry, middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert result == {"toolCallId": "c1", "name": "read", "value": "patched"}
    refused = await dispatch_tool_call(
        call("nope", id="c2"), registry=registry, middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert refused["toolCallId"] == "c2"
    assert seen[1]["value"]["code"] == "unknown_tool"


@pytest.mark.anyio
async def test_tool_result_middleware_returning_garbage_becomes_error() -> None:
    rec = Recorder()
    middleware = create_middleware_registry()
    middleware.use("tool_result", lambda value, next: None)
    result = await dispatch_tool_call(
        call("read"),
        registry=create_tool_registry([rec.tool("read")]),
        middleware=middleware,
        redactor=NOOP_REDACTOR,
    )
    assert result["isError"] is True and result["value"]["code"] == "invalid_tool_call"


@pytest.mark.anyio
async def test_throw_policy_middleware_error_propagates_without_executing() -> None:
    rec = Recorder()
    middleware = create_middleware_registry(error_policy="throw")

    def fail(value: Any, next: Any) -> Any:
        raise LookupError("middleware bug")

    middleware.use("tool_call", fail)
    with pytest.raises(LookupError, match="middleware bug"):
        await dispatch_tool_call(
            call("read"),
            registry=create_tool_registry([rec.tool("read")]),
            middleware=middleware,
            redactor=NOOP_REDACTOR,
        )
    assert rec.calls == []


@pytest.mark.anyio
async def test_cancellation_propagates_out_of_a_tool() -> None:
    started = anyio.Event()

    async def hang(args: dict[str, Any], ctx: ToolContext) -> None:
        started.set()
        await anyio.sleep_forever()

    registry = create_tool_registry([define_tool("hang", hang)])
    results: list[Any] = []
    async with anyio.create_task_group() as group:

        async def run() -> None:
            results.append(
                await dispatch_tool_call(call("hang"), registry=registry, redactor=NOOP_REDACTOR)
            )

        group.start_soon(run)
        await started.wait()
        group.cancel_scope.cancel()
    assert results == []


def test_bad_tool_definitions_fail_at_definition() -> None:
    def noop(args: dict[str, Any], ctx: ToolContext) -> None:
        return None

    with pytest.raises(ConfigError, match="tool name"):
        define_tool("", noop)
    with pytest.raises(ConfigError, match="tool name"):
        define_tool(" padded", noop)
    with pytest.raises(ConfigError, match="execute must be callable"):
        define_tool("x", "noop")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        define_tool("x", noop, parameters={"type": "not-a-type"})
    with pytest.raises(ConfigError, match="parameters must be a JSON schema object"):
        define_tool("x", noop, parameters=[])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="exclusive must be a bool"):
        define_tool("x", noop, exclusive="yes")  # type: ignore[arg-type]


def test_tool_decorator_defaults_and_overrides() -> None:
    @tool
    def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
        """Find a record.

        Longer text that is not part of the description."""
        return "x"

    assert lookup.name == "lookup" and lookup.description == "Find a record."
    assert lookup.declaration() == {"name": "lookup", "description": "Find a record."}

    @tool(name="find", description="Custom.", parameters=SCHEMA, exclusive=True)
    def other(args: dict[str, Any], ctx: ToolContext) -> str:
        return "y"

    assert (other.name, other.description, other.exclusive) == ("find", "Custom.", True)
    assert other.declaration()["parameters"] == SCHEMA


@pytest.mark.anyio
async def test_tool_mutating_its_arguments_does_not_edit_the_call() -> None:
    def greedy(args: dict[str, Any], ctx: ToolContext) -> Any:
        return args.pop("path")

    original = call("greedy", {"path": "a"})
    result = await dispatch_tool_call(
        original,
        registry=create_tool_registry([define_tool("greedy", greedy)]),
        redactor=NOOP_REDACTOR,
    )
    assert result["value"] == "a"
    assert original["arguments"] == {"path": "a"}
