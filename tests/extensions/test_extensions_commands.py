from __future__ import annotations

from typing import Any

import pytest

from prism.errors import CommandError, ConfigError, PermissionDeniedError, UnknownNameError
from prism.extensions import (
    CommandDefinition,
    ExtensionAPI,
    create_extension_kernel,
    define_command,
    define_extension,
    execute_command,
)
from prism.registries import ContributionRegistry
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.permissions import create_allowlist_policy

SECRET = "tok-9f8e7d6c5b4a3210"


def registry_with(*commands: CommandDefinition) -> ContributionRegistry[Any]:
    registry: ContributionRegistry[Any] = ContributionRegistry("command")
    for command in commands:
        registry.register(command.name, command)
    return registry


@pytest.mark.anyio
async def test_executes_sync_and_async_commands_with_ctx() -> None:
    async def greet(args: dict[str, Any], ctx: Any) -> str:
        return f"hello {args['who']} from {ctx['session']}"

    registry = registry_with(
        define_command("greet", greet, parameters={"type": "object", "required": ["who"]}),
        define_command("count", lambda args, ctx: len(args)),
    )
    assert await execute_command(
        registry, "greet", {"who": "ada"}, {"session": "s1"}, redactor=NOOP_REDACTOR
    ) == ("hello ada from s1")
    assert await execute_command(registry, "count", redactor=NOOP_REDACTOR) == 0


@pytest.mark.anyio
async def test_unregistered_name_refused_and_nothing_runs() -> None:
    ran: list[str] = []
    registry = registry_with(define_command("om:status", lambda args, ctx: ran.append("x")))
    with pytest.raises(
        UnknownNameError, match="unknown command 'om:view'; registered: 'om:status'"
    ):
        await execute_command(registry, "om:view", {}, redactor=NOOP_REDACTOR)
    assert ran == []


@pytest.mark.anyio
async def test_non_object_args_refused() -> None:
    ran: list[str] = []
    registry = registry_with(define_command("c", lambda args, ctx: ran.append("x")))
    with pytest.raises(CommandError, match="command 'c' arguments must be a JSON object"):
        await execute_command(registry, "c", ["a"], redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    assert ran == []


@pytest.mark.anyio
async def test_schema_violation_names_location_not_value() -> None:
    ran: list[str] = []
    schema = {
        "type": "object",
        "properties": {"mode": {"enum": ["full", "visible"]}},
        "additionalProperties": False,
    }
    registry = registry_with(
        define_command("view", lambda args, ctx: ran.append("x"), parameters=schema)
    )
    with pytest.raises(CommandError) as info:
        await execute_command(registry, "view", {"mode": SECRET}, redactor=NOOP_REDACTOR)
    assert str(info.value) == (
        "command 'view' arguments are invalid: args.mode fails 'enum' [\"full\", \"visible\"]"
    )
    assert ran == []


@pytest.mark.anyio
async def test_run_failure_is_wrapped_and_redacted() -> None:
    def fail(args: dict[str, Any], ctx: Any) -> None:
        raise RuntimeError(f"cannot use {SECRET}")

    registry = registry_with(define_command("fail", fail))
    with pytest.raises(CommandError) as info:
        await execute_command(registry, "fail", redactor=create_redactor([SECRET]))
    assert str(info.value) == "command 'fail' failed: cannot use [REDACTED]"
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.anyio
async def test_permission_policy_guards_commands() -> None:
    ran: list[str] = []
    registry = registry_with(
        define_command("safe", lambda args, ctx: ran.append("safe")),
        define_command("danger", lambda args, ctx: ran.append("danger")),
    )
    policy = create_allowlist_policy(commands=["safe"])
    await execute_command(registry, "safe", permission_policy=policy, redactor=NOOP_REDACTOR)
    with pytest.raises(PermissionDeniedError, match="command 'danger' is not permitted"):
        await execute_command(registry, "danger", permission_policy=policy, redactor=NOOP_REDACTOR)
    assert ran == ["safe"]


@pytest.mark.anyio
async def test_registered_value_must_be_a_command_definition() -> None:
    registry: ContributionRegistry[Any] = ContributionRegistry("command")
    registry.register("raw", lambda args, ctx: None)
    with pytest.raises(CommandError, match="is not a CommandDefinition"):
        await execute_command(registry, "raw", redactor=NOOP_REDACTOR)


def test_definition_validation() -> None:
    with pytest.raises(ConfigError, match="run must be callable"):
        define_command("x", None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="command name"):
        define_command(" x", lambda a, c: None)
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        define_command("x", lambda a, c: None, parameters={"type": 12})
    command = define_command("x", lambda a, c: None, description="d", parameters={"type": "object"})
    assert command.to_json() == {"name": "x", "description": "d", "parameters": {"type": "object"}}


@pytest.mark.anyio
async def test_extension_contributed_command_runs_through_kernel_registry() -> None:
    def setup(api: ExtensionAPI) -> None:
        api.register_command(define_command("ping", lambda args, ctx: "pong"))

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([define_extension("pinger", setup)])
    assert (
        await execute_command(kernel.registries.commands, "ping", redactor=NOOP_REDACTOR) == "pong"
    )


def test_collect_commands_merges_sources_in_order_and_refuses_clashes() -> None:
    from prism.errors import DuplicateContributionError
    from prism.extensions import collect_commands

    host = [define_command("a", lambda args, ctx: 1)]
    registry: ContributionRegistry[Any] = ContributionRegistry("command")
    registry.register("b", define_command("b", lambda args, ctx: 2))
    merged = collect_commands(host, registry)
    assert merged.names() == ["a", "b"]
    with pytest.raises(DuplicateContributionError, match="command 'a' is contributed twice"):
        collect_commands(host, [define_command("a", lambda args, ctx: 3)])
    with pytest.raises(ConfigError, match="not a CommandDefinition"):
        collect_commands([lambda args, ctx: 4])  # type: ignore[list-item]
