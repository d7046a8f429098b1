"""Structured output: ``run(..., output_type=T)`` for any type a
``pydantic.TypeAdapter`` accepts (models, dataclasses, TypedDicts, ``int``,
``list[str]``, unions, ``Literal``).

The provider is asked for JSON matching the type's schema in one of three
modes: ``response_format`` ("native": the provider's JSON-schema response
format, for providers whose ``supports_response_format`` is true, such as
the OpenAI-compatible adapter), ``tool`` (a final tool the model calls with
the answer) or ``prompted`` (the schema in the instructions, the reply's
text parsed). A schema that is not a JSON object (``int``, ``list[str]``, a
union) is wrapped as ``{"response": <schema>}``, since tools and response
formats take objects; the wrapper is removed before validation. The answer
is validated with pydantic; an invalid one goes back to the model with the
problem (never the values) and counts as a tool round, so
``max_tool_rounds`` bounds the retries.

pydantic is imported here only, and this module only when a run asks for
structured output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from prism.contracts import Message, ProviderRequest, ToolDeclaration
from prism.errors import ConfigError, StructuredOutputError

__all__ = [
    "OUTPUT_TOOL_NAME",
    "OutputSpec",
    "StructuredOutputError",
    "build_output_spec",
    "output_for_run",
]

OUTPUT_TOOL_NAME = "final_result"
OutputMode = Literal["auto", "response_format", "native", "tool", "prompted"]
_MODES: tuple[str, ...] = ("auto", "response_format", "native", "tool", "prompted")
# The field a non-object answer travels in (see the module docstring).
WRAPPER_FIELD = "response"
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.S)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """A run's requested output: the type, its schema and how it is asked for.

    ``name`` is the wire-safe name (``[A-Za-z0-9_-]``, a response format's
    ``name``); ``label`` is how messages show the type (``list[int]``);
    ``wrapped`` says the schema is ``{"response": <the type's schema>}``."""

    output_type: Any
    adapter: Any  # pydantic.TypeAdapter
    schema: dict[str, Any]
    name: str
    mode: Literal["response_format", "tool", "prompted"]
    label: str = ""
    wrapped: bool = False

    def _what(self) -> str:
        if self.wrapped:
            return f"{{{WRAPPER_FIELD!r}: <a {self.label}>}} object"
        return f"{self.label or self.name} object"

    def declaration(self) -> ToolDeclaration:
        return {
            "name": OUTPUT_TOOL_NAME,
            "description": f"Give the final answer as a {self._what()}. Call this once, last.",
            "parameters": self.schema,
        }

    def extra_tools(self) -> list[ToolDeclaration]:
        return [self.declaration()] if self.mode == "tool" else []

    def instructions(self) -> str:
        if self.mode == "tool":
            return (
                f"When you have the final answer, call the tool {OUTPUT_TOOL_NAME!r} "
                f"with it (a {self._what()}); do not answer in plain text."
            )
        if self.mode == "prompted":
            schema = json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)
            return (
                f"Reply with only a JSON {self._what()} matching this JSON schema, "
                f"and no other text: {schema}"
            )
        return f"Reply with only a JSON {self._what()} matching the given schema."

    def shape_request(self, request: ProviderRequest) -> ProviderRequest:
        """Add the response format to a request (response-format mode)."""
        if self.mode != "response_format":
            return request
        options = dict(request.get("options") or {})
        options["responseFormat"] = {
            "type": "json_schema",
            "name": self.name,
            "schema": self.schema,
        }
        shaped = dict(request)
        shaped["options"] = options
        return shaped  # type: ignore[return-value]

    def parse_text(self, text: str) -> tuple[Any, str | None]:
        """``(value, None)`` when ``text`` is a valid answer, else ``(None, problem)``."""
        fenced = _FENCE.match(text)
        body = fenced.group(1) if fenced else text
        try:
            data = json.loads(body)
        except json.JSONDecodeError as error:
            return None, f"the reply is not valid JSON ({error.msg} at char {error.pos})"
        except RecursionError:
            return None, "the reply is nested too deeply"
        return self.validate(data)

    def validate(self, data: Any) -> tuple[Any, str | None]:
        from pydantic import ValidationError

        from prism.tools.from_function import describe_validation_error

        if self.wrapped and isinstance(data, dict) and set(data) == {WRAPPER_FIELD}:
            data = data[WRAPPER_FIELD]
        # A bare value is taken too: a prompted model often answers `42`.
        try:
            return self.adapter.validate_python(data), None
        except ValidationError as error:
            return None, describe_validation_error(error, root="output")

    def correction(self, problem: str) -> Message:
        """The message that sends an invalid answer back to the model."""
        how = (
            f"call {OUTPUT_TOOL_NAME!r} again"
            if self.mode == "tool"
            else f"reply again with only a JSON {self._what()}"
        )
        return {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": (
                        f"Your answer was not a valid {self.label or self.name}: {problem}."
                        f" Please {how}."
                    ),
                }
            ],
        }


def type_label(output_type: Any) -> str:
    """How messages name a type: ``Weather``, ``list[int]``, ``int | str``."""
    if isinstance(output_type, type) and not hasattr(output_type, "__origin__"):
        return output_type.__name__
    return repr(output_type).replace("typing.", "").replace("typing_extensions.", "")


def _wire_name(output_type: Any) -> str:
    """A response format's name: the class name when there is one."""
    name = getattr(output_type, "__name__", None)
    if not isinstance(name, str) or type_label(output_type) != name:
        return "output"
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"


def _json_schema(output_type: Any) -> tuple[Any, dict[str, Any], str]:
    """The type's adapter and schema; ``ConfigError`` naming the type when
    pydantic cannot build them."""
    from pydantic import PydanticUserError, TypeAdapter

    from prism.tools.from_function import schema_generator

    label = type_label(output_type)
    try:
        adapter = TypeAdapter(output_type)
        schema = adapter.json_schema(schema_generator=schema_generator())
    except (PydanticUserError, TypeError, ValueError, NameError) as error:
        raise ConfigError(
            f"run option output_type {label}: pydantic cannot build a JSON schema for it: "
            f"{str(error).splitlines()[0]}"
        ) from None
    return adapter, schema, label


def _wrap(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Objects as they are; anything else inside ``{"response": ...}``, with
    ``$defs`` kept at the root so ``#/$defs/...`` references still resolve."""
    if schema.get("type") == "object":
        return schema, False
    inner = dict(schema)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPER_FIELD: inner},
        "required": [WRAPPER_FIELD],
        "additionalProperties": False,
    }
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped, True


def build_output_spec(output_type: Any, mode: Any, provider: Any, tools: Any) -> OutputSpec:
    """Check ``output_type`` and ``mode`` (``ConfigError`` naming what is
    wrong) and pick how the provider is asked: ``auto`` takes its response
    format when it says it supports one, else the final tool."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ConfigError(f"run option output_mode must be one of {list(_MODES)}, got {mode!r}")
    if output_type is None or isinstance(output_type, (str, int, float, bytes)):
        raise ConfigError(
            "run option output_type must be a type pydantic's TypeAdapter accepts (a model,"
            f" dataclass, TypedDict, int, list[str], a union, ...), got {output_type!r}"
        )
    adapter, schema, label = _json_schema(output_type)
    schema, wrapped = _wrap(schema)
    if mode == "auto":
        mode = "response_format" if getattr(provider, "supports_response_format", False) else "tool"
    elif mode == "native":
        mode = "response_format"
    if mode == "tool" and tools.get(OUTPUT_TOOL_NAME) is not None:
        raise ConfigError(
            f"output_type asks for the answer through a tool named {OUTPUT_TOOL_NAME!r}, "
            "and the agent already has a tool of that name; rename it or pass "
            "output_mode='response_format' or 'prompted'"
        )
    return OutputSpec(
        output_type=output_type,
        adapter=adapter,
        schema=schema,
        name=_wire_name(output_type),
        mode=mode,
        label=label,
        wrapped=wrapped,
    )


def output_for_run(config: Any, model: Any, output_type: Any, mode: Any) -> OutputSpec | None:
    """The run options ``output_type``/``output_mode`` resolved against the
    provider of the run's model (``None`` without ``output_type``)."""
    if output_type is None:
        if mode != "auto":
            raise ConfigError("run option output_mode applies only with output_type")
        return None
    return build_output_spec(output_type, mode, config.provider_for(model), config.tools)
