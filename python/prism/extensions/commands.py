"""Command contributions: named actions a host (the CLI's RPC ``command``
request) runs by name, and only when registered.

``execute_command`` refuses unregistered names before anything runs, checks
the optional ``"command"`` permission, validates the arguments against the
command's JSON schema, then calls ``run(args, ctx)``. ``ctx`` is whatever the
host passes (the CLI passes its session context); Prism does not inspect it.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import jsonschema.exceptions

from prism.errors import CommandError, ConfigError
from prism.extensions._redaction import describe_error, make_text_redactor
from prism.registries import ContributionRegistry, check_contribution_name
from prism.security.permissions import PermissionPolicy, PermissionRequest, require_permission

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

    def __post_init__(self) -> None:
        check_contribution_name("command", self.name)
        if not callable(self.run):
            raise ConfigError(f"command {self.name!r}: run must be callable")
        if self.parameters is not None:
            if not isinstance(self.parameters, Mapping):
                raise ConfigError(f"command {self.name!r}: parameters must be a JSON schema object")
            try:
                jsonschema.Draft202012Validator.check_schema(dict(self.parameters))
            except jsonschema.exceptions.SchemaError as error:
                where = "/".join(str(p) for p in error.path) or "(root)"
                raise ConfigError(
                    f"command {self.name!r}: parameters is not a valid JSON schema at {where}"
                ) from None

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


def _schema_problem(name: str, error: jsonschema.exceptions.ValidationError) -> str:
    # jsonschema's own message quotes the offending value; arguments may hold
    # secrets, so describe the location and the rule only.
    location = "args" + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
    )
    rule = json.dumps(error.validator_value, default=str)
    if len(rule) > 120:
        rule = rule[:117] + "..."
    return f"command {name!r} arguments are invalid: {location} fails {error.validator!r} {rule}"


async def execute_command(
    registry: ContributionRegistry[Any],
    name: str,
    args: Mapping[str, Any] | None = None,
    ctx: Any = None,
    *,
    permission_policy: PermissionPolicy | None = None,
    secrets: Iterable[str] = (),
) -> Any:
    """Run the registered command ``name``; nothing runs for an unknown name,
    a denied command or invalid arguments. Errors raised by ``run`` come back
    as ``CommandError`` with a redacted message (the original is ``__cause__``)."""
    command = registry.resolve(name)  # UnknownNameError before anything else
    if not isinstance(command, CommandDefinition):
        raise CommandError(f"command {name!r} is not a CommandDefinition")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise CommandError(f"command {name!r} arguments must be a JSON object")
    await require_permission(permission_policy, PermissionRequest(kind="command", name=name))
    arguments = dict(args)
    if command.parameters is not None:
        validator = jsonschema.Draft202012Validator(dict(command.parameters))
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if error is not None:
            raise CommandError(_schema_problem(name, error))
    redact = make_text_redactor(secrets)
    try:
        result = command.run(arguments, ctx)
        if inspect.isawaitable(result):
            result = await result
    except Exception as error:
        raise CommandError(f"command {name!r} failed: {describe_error(error, redact)}") from error
    return result
