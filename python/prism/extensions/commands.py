"""Command contributions: named actions a host (the CLI's RPC ``command``
request) runs by name, and only when registered.

``execute_command`` refuses unregistered names before anything runs, checks
the optional ``"command"`` permission, validates the arguments against the
command's JSON schema, then calls ``run(args, ctx)``. ``ctx`` is whatever the
host passes (the CLI passes its session context); Prism does not inspect it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prism._schema import compile_schema, schema_violation
from prism.errors import CommandError, ConfigError, DuplicateContributionError
from prism.extensions._redaction import describe_error
from prism.registries import ContributionRegistry, check_contribution_name
from prism.security.permissions import PermissionPolicy, PermissionRequest, require_permission
from prism.security.redaction import SecretRedactor, require_redactor

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
    redactor: SecretRedactor,
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


def collect_commands(
    *sources: Iterable[CommandDefinition] | ContributionRegistry[Any],
) -> ContributionRegistry[CommandDefinition]:
    """One command registry built from several sources, in order: a host's
    built-ins, the commands it contributes directly, an extension kernel's
    ``registries.commands``. This is what a host hands to the code that runs
    commands by name (the CLI's RPC ``command`` request), so every
    contributed command reaches it. Each value must be a ``CommandDefinition``
    (``ConfigError`` otherwise); a name contributed twice is refused with
    ``DuplicateContributionError`` instead of one silently shadowing the other."""
    merged: ContributionRegistry[CommandDefinition] = ContributionRegistry("command")
    for source in sources:
        pairs: list[tuple[Any, Any]] = (
            source.items()
            if isinstance(source, ContributionRegistry)
            else [(getattr(c, "name", None), c) for c in source]
        )
        for name, command in pairs:
            if not isinstance(command, CommandDefinition):
                raise ConfigError(
                    f"command {name!r} is a {type(command).__name__}, not a CommandDefinition "
                    "(build it with define_command)"
                )
            if merged.has(command.name) or (name != command.name and merged.has(name)):
                raise DuplicateContributionError(
                    f"command {command.name!r} is contributed twice; command names must be unique "
                    "across built-ins, host commands and extensions"
                )
            merged.register(name, command)
    return merged
