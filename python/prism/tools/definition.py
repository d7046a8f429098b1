"""Tool definitions: what a host hands Prism, and the context a tool runs with."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from prism._schema import compile_schema, schema_violation
from prism.contracts import ToolDeclaration
from prism.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

ToolExecute: TypeAlias = Callable[[dict[str, Any], "ToolContext"], "Any | Awaitable[Any]"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Per-call context. Dispatch fills ``tool_call_id``; the runtime fills the ids.

    Cancellation reaches a tool as anyio cancellation of the awaiting task;
    there is no separate signal object.
    """

    session_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A host-owned tool.

    ``execute(args, ctx)`` may be sync or async. Sync tools are called directly
    on the event loop (no thread hop), so they must be quick; wrap slow or
    blocking work in ``anyio.to_thread.run_sync`` inside an async tool.
    ``parameters`` is a JSON schema (draft 2020-12) checked when the tool is
    defined and enforced on every call. ``exclusive`` tools run alone when
    several calls are dispatched concurrently.
    """

    name: str
    execute: ToolExecute
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    exclusive: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
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


def define_tool(
    name: str,
    execute: ToolExecute,
    *,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        execute=execute,
        description=description,
        parameters=parameters,
        exclusive=exclusive,
        metadata=dict(metadata or {}),
    )


@overload
def tool(fn: ToolExecute, /) -> ToolDefinition: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> Callable[[ToolExecute], ToolDefinition]: ...


def tool(
    fn: ToolExecute | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    exclusive: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ToolDefinition | Callable[[ToolExecute], ToolDefinition]:
    """Decorator: ``@tool`` or ``@tool(parameters=...)``. Name defaults to the
    function name, description to the docstring's first paragraph."""

    def wrap(function: ToolExecute) -> ToolDefinition:
        doc = inspect.getdoc(function) or ""
        return define_tool(
            name if name is not None else getattr(function, "__name__", ""),
            function,
            description=description if description is not None else doc.split("\n\n")[0].strip(),
            parameters=parameters,
            exclusive=exclusive,
            metadata=metadata,
        )

    if fn is not None:
        return wrap(fn)
    return wrap
