"""Command contributions: named actions a host (the CLI's RPC ``command``
request) runs by name, and only when registered.

``execute_command`` refuses unregistered names before anything runs, checks
the optional ``"command"`` permission, validates the arguments against the
command's JSON schema, then calls ``run(args, ctx)``. ``ctx`` is whatever the
host passes (the CLI passes its session context); Prism does not inspect it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prism._schema import compile_schema, schema_violation
from prism.errors import CommandError, ConfigError
from prism.extensions._redaction import describe_error
from prism.registries import ContributionRegistry, check_contribution_name
from prism.security.permissions import PermissionPolicy, PermissionRequest, require_permission
from prism.security.redaction import NOOP_REDACTOR, SecretRedactor, require_redactor

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

CommandRun = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True, slots=True)
class CommandDefinition:
    """``run(args, ctx)`` may be sync or async; ``parameters`` is an optional
    JSON schema for ``args`` (an object)."""

    name: str
    run: CommandRun
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    _validator: Validator | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_contribution_name("command", self.name)
        if not callable(self.run):
            raise ConfigError(f"command {self.name!r}: run must be callable")
        if self.parameters is not None:
            validator = compile_schema(self.parameters, f"command {self.name!r}")
            object.__setattr__(self, "_validator", validator)

    def to_json(self) -> dict[str, Any]:
        """The declaration a client may list (no callable)."""
        declaration: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            declaration["parameters"] = dict(self.parameters)
        return declaration


def define_command(
    name: str,
    run: CommandRun,
    *,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> CommandDefinition:
    return CommandDefinition(
        name=name,
        run=run,
        description=description,
        parameters=parameters,
        metadata=dict(metadata or {}),
    )


async def execute_command(
    registry: ContributionRegistry[Any],
    name: str,
    args: Mapping[str, Any] | None = None,
    ctx: Any = None,
    *,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor = NOOP_REDACTOR,
) -> Any:
    """Run the registered command ``name``; nothing runs for an unknown name,
    a denied command or invalid arguments. Errors raised by ``run`` come back
    as ``CommandError`` with a message redacted by ``redactor`` (built once by
    the host, e.g. ``agent.config.redactor``). The original is ``__cause__``."""
    command = registry.resolve(name)  # UnknownNameError before anything else
    if not isinstance(command, CommandDefinition):
        raise CommandError(f"command {name!r} is not a CommandDefinition")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise CommandError(f"command {name!r} arguments must be a JSON object")
    await require_permission(permission_policy, PermissionRequest(kind="command", name=name))
    arguments = dict(args)
    if command._validator is not None:
        problem = schema_violation(command._validator, arguments)
        if problem is not None:
            raise CommandError(f"command {name!r} arguments are invalid: {problem}")
    redactor = require_redactor(redactor, owner="execute_command")
    try:
        result = command.run(arguments, ctx)
        if inspect.isawaitable(result):
            result = await result
    except Exception as error:
        raise CommandError(f"command {name!r} failed: {describe_error(error, redactor)}") from error
    return result
