"""Tool definitions: what a host hands Prism, and the context a tool runs with."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from prism._schema import compile_schema, schema_violation
from prism.contracts import ToolDeclaration
from prism.errors import ConfigError
from prism.tools.context import ToolArgumentsError as ToolArgumentsError
from prism.tools.context import ToolContext as ToolContext
from prism.tools.context import ToolExecute as ToolExecute
from prism.tools.context import ToolResultError as ToolResultError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A host-owned tool.

    ``execute(args, ctx)`` may be sync or async. Sync tools are called directly
    on the event loop (no thread hop), so they must be quick; wrap slow or
    blocking work in ``anyio.to_thread.run_sync`` inside an async tool.
    ``parameters`` is a JSON schema (draft 2020-12) checked when the tool is
    defined and enforced on every call. ``exclusive`` tools run alone when
    several calls are dispatched concurrently. ``idempotent`` tools may run
    twice for one call: a durable run resumed after a crash re-executes an
    idempotent call that started but left no result, and answers any other
    such call with an ``interrupted`` error instead (docs/durable.md).
    """

    name: str
    execute: ToolExecute
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    exclusive: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    idempotent: bool = False
    _validator: Validator | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name != self.name.strip():
            raise ConfigError(
                f"tool name must be a non-empty string without edge spaces: {self.name!r}"
            )
        if not callable(self.execute):
            raise ConfigError(f"tool {self.name!r}: execute must be callable")
        if not isinstance(self.description, str):
            raise ConfigError(f"tool {self.name!r}: description must be a string")
        if not isinstance(self.exclusive, bool):
            raise ConfigError(f"tool {self.name!r}: exclusive must be a bool")
        if not isinstance(self.idempotent, bool):
            raise ConfigError(f"tool {self.name!r}: idempotent must be a bool")
        if not isinstance(self.metadata, Mapping):
            raise ConfigError(f"tool {self.name!r}: metadata must be a mapping")
        if self.parameters is not None:
            validator = compile_schema(self.parameters, f"tool {self.name!r}")
            object.__setattr__(self, "_validator", validator)

    def declaration(self) -> ToolDeclaration:
        """What a provider sees of this tool."""
        declared: ToolDeclaration = {"name": self.name}
        if self.description:
            declared["description"] = self.description
        if self.parameters is not None:
            declared["parameters"] = dict(self.parameters)
        return declared

    def validate_arguments(self, arguments: Mapping[str, Any]) -> str | None:
        """``None`` when ``arguments`` match the schema, else a message naming the field."""
        if self._validator is None:
            return None
        problem = schema_violation(self._validator, arguments)
        if problem is None:
            return None
        return f"arguments for tool {self.name!r} do not match its schema: {problem}"


@overload
def define_tool(
    name: str,
    execute: ToolExecute,
    *,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    idempotent: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition: ...


@overload
def define_tool(
    function: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    idempotent: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition: ...


def define_tool(
    name_or_function: str | Callable[..., Any] | None = None,
    /,
    execute: ToolExecute | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    idempotent: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition:
    """``define_tool(name, execute, ...)``, or ``define_tool(function)`` to
    build the schema and description from a typed function (see :func:`tool`)."""
    if name_or_function is None or isinstance(name_or_function, str):
        tool_name = name if name_or_function is None else name_or_function
        if tool_name is None or execute is None:
            raise ConfigError("define_tool takes (name, execute, ...) or a function")
        if name is not None and name_or_function is not None:
            raise ConfigError(f"define_tool got the name twice ({tool_name!r} and {name!r})")
        return ToolDefinition(
            name=tool_name,
            execute=execute,
            description="" if description is None else description,
            parameters=parameters,
            exclusive=exclusive,
            idempotent=idempotent,
            metadata=dict(metadata or {}),
        )
    if not callable(name_or_function) or execute is not None:
        raise ConfigError(
            "define_tool takes (name, execute, ...) or (function, name=..., description=...)"
        )
    return _from_function(
        name_or_function,
        name=name,
        description=description,
        parameters=parameters,
        exclusive=exclusive,
        idempotent=idempotent,
        metadata=metadata,
    )


def _from_function(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    parameters: Mapping[str, Any] | None,
    exclusive: bool,
    idempotent: bool,
    metadata: Mapping[str, Any] | None,
) -> ToolDefinition:
    # The (args, ctx) convention, or an explicit schema, keeps the function as
    # the execute as is; anything else is a typed function.
    from prism.tools.from_function import build_function_tool, is_raw_execute

    if parameters is not None or is_raw_execute(function):
        doc = inspect.getdoc(function) or ""
        return ToolDefinition(
            name=name if name is not None else getattr(function, "__name__", ""),
            execute=function,
            description=description if description is not None else doc.split("\n\n")[0].strip(),
            parameters=parameters,
            exclusive=exclusive,
            idempotent=idempotent,
            metadata=dict(metadata or {}),
        )
    built = build_function_tool(function, name=name, description=description)
    return ToolDefinition(
        name=built.name,
        execute=built.execute,
        description=built.description,
        parameters=built.parameters,
        exclusive=exclusive,
        idempotent=idempotent,
        metadata=dict(metadata or {}),
    )


@overload
def tool(fn: Callable[..., Any], /) -> ToolDefinition: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    idempotent: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    idempotent: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Decorator: ``@tool`` or ``@tool(name=..., description=..., ...)``.

    A function with keyword parameters gets its JSON schema from its type
    hints (pydantic models, dataclasses, TypedDicts, ``Literal``,
    ``Optional``, defaults) and is called with the validated values; a
    ``ctx: ToolContext`` parameter receives the call's context. A function
    ``(args, ctx)``, or one given ``parameters=``, gets the arguments dict as
    is. Name defaults to the function name, description to the docstring's
    first paragraph (parameter descriptions come from its ``Args:`` section)."""

    def wrap(function: Callable[..., Any]) -> ToolDefinition:
        return _from_function(
            function,
            name=name,
            description=description,
            parameters=parameters,
            exclusive=exclusive,
            idempotent=idempotent,
            metadata=metadata,
        )

    if fn is not None:
        return wrap(fn)
    return wrap
