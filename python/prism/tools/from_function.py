"""Tools built from a typed function: the schema from its type hints, the
description from its docstring.

pydantic does the schema generation and the validation (models, dataclasses,
TypedDicts, ``Literal``, ``Optional`` and defaults all come for free). It is
imported here only, and this module is imported only when a tool is built
from a function without an explicit schema, so ``import prism`` and the CLI
never pay for it.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from prism.errors import ConfigError
from prism.tools.content import ToolOutput
from prism.tools.context import ToolArgumentsError, ToolContext, ToolExecute, ToolResultError

if TYPE_CHECKING:
    from pydantic import BaseModel

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(description, {parameter: description})`` from a docstring.

    The description is the first paragraph (stopping at a section header);
    parameter descriptions come from a Google-style ``Args:`` section, with
    indented continuation lines joined.
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(stripped)
        if header and len(line) - len(line.lstrip()) == 0:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters")
            current = None
            continue
        if not in_args or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(stripped)
        if match and (current is None or indent <= base_indent):
            current = match.group(1).lstrip("*")
            base_indent = indent
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary), params


def _is_context(name: str, annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    return annotation is inspect.Parameter.empty and name == "ctx"


def is_raw_execute(function: Callable[..., Any]) -> bool:
    """True for the ``execute(args, ctx)`` convention: two positional
    parameters, the first named ``args`` (unannotated or a dict/Mapping) and
    the second the context. Such a function gets the arguments dict as is."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return True  # builtins and other callables without a signature
    if len(parameters) != 2 or parameters[0].name != "args":
        return False
    first = parameters[0].annotation
    if isinstance(first, str):
        first = first.split("[", 1)[0].strip()
        first_ok = first in ("dict", "Dict", "Mapping", "typing.Mapping", "Any")
    else:
        origin = typing.get_origin(first) or first
        first_ok = first is inspect.Parameter.empty or origin in (dict, Mapping, Any)
    second = parameters[1]
    second_ok = second.name == "ctx" or second.annotation in (ToolContext, "ToolContext")
    return first_ok and second_ok


ReturnSerializer = Callable[[Any], Any]


def return_serializer(
    tool_name: str, hints: Mapping[str, Any], *, awaited_by_caller: bool = False
) -> ReturnSerializer:
    """``value -> JSON data`` through a pydantic ``TypeAdapter`` of the
    function's return annotation (JSON mode), so ``list[Model]``, ``date``,
    ``Enum``, ``UUID``, sets and nested dataclasses come out as the JSON a
    store can hold. A value that does not match its annotation is serialised
    by its runtime type; one pydantic cannot serialise at all raises
    :class:`ToolResultError`, which dispatch turns into a ``tool_error``
    result the model sees."""
    from pydantic import TypeAdapter
    from pydantic_core import PydanticSerializationError

    annotation = Any if awaited_by_caller else hints.get("return", Any)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    except Exception:  # an annotation pydantic cannot describe (a plain class, a Protocol)
        adapter = TypeAdapter(Any)

    def serialise(value: Any) -> Any:
        try:
            if isinstance(value, ToolOutput):
                # The images pass as they are; only the JSON value is serialised.
                inner = TypeAdapter(Any).dump_python(value.value, mode="json", warnings=False)
                return ToolOutput(inner, value.images)
            return adapter.dump_python(value, mode="json", warnings=False)
        except (PydanticSerializationError, TypeError, ValueError) as error:
            reason = (str(error).splitlines() or [type(error).__name__])[0]
            raise ToolResultError(
                f"tool {tool_name!r} returned a value that cannot be serialised to JSON: "
                f"{reason[:200]}"
            ) from None

    return serialise


def schema_generator() -> Any:
    """pydantic's JSON-schema generator without per-field titles: a title
    that repeats the field name only costs the model tokens."""
    from pydantic.json_schema import GenerateJsonSchema

    class WithoutFieldTitles(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return WithoutFieldTitles


def describe_validation_error(error: Any, root: str = "args") -> str:
    """A pydantic ``ValidationError`` as ``loc: message`` pairs, never the
    input values (arguments may carry secrets)."""
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        location = "".join(f".{part}" for part in item.get("loc", ()))
        parts.append(f"{root}{location}: {item.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid arguments"


@dataclasses.dataclass(frozen=True, slots=True)
class FunctionTool:
    """What :func:`build_function_tool` derives from a function."""

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ToolExecute


def build_function_tool(
    function: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> FunctionTool:
    """Derive name, description, JSON schema and an ``execute(args, ctx)``
    wrapper from a function with keyword parameters (and optionally a
    ``ctx: ToolContext`` parameter)."""
    from pydantic import ValidationError

    tool_name = name if name is not None else getattr(function, "__name__", "")
    signature, hints = _signature_and_hints(function, tool_name)
    summary, param_docs = parse_docstring(inspect.getdoc(function) or "")
    fields, context_param = _argument_fields(signature, hints, param_docs, tool_name)
    model, schema = _arguments_model(tool_name, fields)

    def bind(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        try:
            parsed = model.model_validate(args)
        except ValidationError as error:
            raise ToolArgumentsError(
                f"arguments for tool {tool_name!r} are invalid: {describe_validation_error(error)}"
            ) from None
        kwargs = {key: getattr(parsed, key) for key in fields}
        if context_param is not None:
            kwargs[context_param] = ctx
        return kwargs

    return FunctionTool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=schema,
        execute=_execute(function, bind, tool_name, hints),
    )


def _signature_and_hints(
    function: Callable[..., Any], tool_name: str
) -> tuple[inspect.Signature, dict[str, Any]]:
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as error:
        raise ConfigError(
            f"tool {tool_name!r}: cannot resolve a type hint ({error}); "
            "define the types the tool uses at module level"
        ) from None
    return signature, hints


def _argument_fields(
    signature: inspect.Signature,
    hints: dict[str, Any],
    param_docs: dict[str, str],
    tool_name: str,
) -> tuple[dict[str, Any], str | None]:
    """The pydantic fields of the model-facing parameters, and the name of
    the ``ToolContext`` parameter when the function has one."""
    from pydantic import Field

    fields: dict[str, Any] = {}
    context_param: str | None = None
    for parameter in signature.parameters.values():
        annotation = hints.get(parameter.name, parameter.annotation)
        if _is_context(parameter.name, annotation):
            context_param = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ConfigError(
                f"tool {tool_name!r}: *{parameter.name} cannot be described to a model; "
                "name each argument"
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ConfigError(
                f"tool {tool_name!r}: parameter {parameter.name!r} is positional-only; "
                "the model passes arguments by name"
            )
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        field_info = Field(default, description=param_docs.get(parameter.name))
        fields[parameter.name] = (annotation, field_info)
    return fields, context_param


def _arguments_model(
    tool_name: str, fields: dict[str, Any]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """The arguments' pydantic model (extra keys refused) and its JSON schema."""
    from pydantic import ConfigDict, create_model

    try:
        model: type[BaseModel] = create_model(
            f"{tool_name or 'tool'}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        schema = model.model_json_schema(schema_generator=schema_generator())
    except Exception as error:  # pydantic raises several kinds for unusable types
        raise ConfigError(
            f"tool {tool_name!r}: cannot build a JSON schema from its type hints: "
            f"{type(error).__name__}: {str(error).splitlines()[0]}"
        ) from None
    schema.pop("title", None)
    return model, schema


def _execute(
    function: Callable[..., Any],
    bind: Callable[[dict[str, Any], ToolContext], dict[str, Any]],
    tool_name: str,
    hints: dict[str, Any],
) -> ToolExecute:
    """``execute(args, ctx)``: bind, call, and dump the return value by its type."""
    to_json = return_serializer(tool_name, hints)
    if inspect.iscoroutinefunction(function):

        async def execute_async(args: dict[str, Any], ctx: ToolContext) -> Any:
            return to_json(await function(**bind(args, ctx)))

        return execute_async
    # A sync function returning an awaitable is annotated with the
    # awaitable, not with what it resolves to: that value is dumped by type.
    awaited_to_json = return_serializer(tool_name, hints, awaited_by_caller=True)

    def execute_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
        value = function(**bind(args, ctx))
        if inspect.isawaitable(value):
            return _finish(value, awaited_to_json)
        return to_json(value)

    return execute_sync


async def _finish(value: Any, to_json: ReturnSerializer) -> Any:
    return to_json(await value)
