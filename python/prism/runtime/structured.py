"""Structured output: ``run(..., output_type=Model)``.

The provider is asked for JSON matching the type's schema, either through
its response format (providers whose ``supports_response_format`` is true,
such as the OpenAI-compatible adapter) or through a final tool the model
calls with the answer. The answer is validated with pydantic; an invalid one
goes back to the model with the problem (never the values) and counts as a
tool round, so ``max_tool_rounds`` bounds the retries.

pydantic is imported here only, and this module only when a run asks for
structured output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, is_dataclass
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
OutputMode = Literal["auto", "response_format", "tool"]
_MODES: tuple[str, ...] = ("auto", "response_format", "tool")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.S)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """A run's requested output: the type, its schema and how it is asked for."""

    output_type: Any
    adapter: Any  # pydantic.TypeAdapter
    schema: dict[str, Any]
    name: str
    mode: Literal["response_format", "tool"]

    def declaration(self) -> ToolDeclaration:
        return {
            "name": OUTPUT_TOOL_NAME,
            "description": f"Give the final answer as a {self.name} object. Call this once, last.",
            "parameters": self.schema,
        }

    def extra_tools(self) -> list[ToolDeclaration]:
        return [self.declaration()] if self.mode == "tool" else []

    def instructions(self) -> str:
        if self.mode == "tool":
            return (
                f"When you have the final answer, call the tool {OUTPUT_TOOL_NAME!r} "
                f"with it (a {self.name} object); do not answer in plain text."
            )
        return f"Reply with only a JSON {self.name} object matching the given schema."

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

        try:
            return self.adapter.validate_python(data), None
        except ValidationError as error:
            return None, describe_validation_error(error, root="output")

    def correction(self, problem: str) -> Message:
        """The message that sends an invalid answer back to the model."""
        how = (
            f"call {OUTPUT_TOOL_NAME!r} again"
            if self.mode == "tool"
            else f"reply again with only a JSON {self.name} object"
        )
        return {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": f"Your answer was not a valid {self.name}: {problem}. Please {how}.",
                }
            ],
        }


def _supported(output_type: Any) -> bool:
    from pydantic import BaseModel
    from typing_extensions import is_typeddict

    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return True
    return (isinstance(output_type, type) and is_dataclass(output_type)) or is_typeddict(
        output_type
    )


def build_output_spec(output_type: Any, mode: Any, provider: Any, tools: Any) -> OutputSpec:
    """Check ``output_type`` and ``mode`` (``ConfigError`` naming what is
    wrong) and pick how the provider is asked: its response format when it
    says it supports one, else the final tool."""
    from pydantic import PydanticUserError, TypeAdapter

    if mode not in _MODES:
        raise ConfigError(f"run option output_mode must be one of {list(_MODES)}, got {mode!r}")
    if not _supported(output_type):
        raise ConfigError(
            "run option output_type must be a pydantic model, a dataclass or a TypedDict "
            f"class, got {output_type!r}"
        )
    name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(output_type, "__name__", "output"))[:64]
    try:
        adapter = TypeAdapter(output_type)
        from prism.tools.from_function import schema_generator

        schema = adapter.json_schema(schema_generator=schema_generator())
    except (PydanticUserError, TypeError, ValueError) as error:
        raise ConfigError(
            f"run option output_type {name}: cannot build a JSON schema: "
            f"{str(error).splitlines()[0]}"
        ) from None
    if mode == "auto":
        mode = "response_format" if getattr(provider, "supports_response_format", False) else "tool"
    if mode == "tool" and tools.get(OUTPUT_TOOL_NAME) is not None:
        raise ConfigError(
            f"output_type asks for the answer through a tool named {OUTPUT_TOOL_NAME!r}, "
            "and the agent already has a tool of that name; rename it or pass "
            "output_mode='response_format'"
        )
    return OutputSpec(output_type=output_type, adapter=adapter, schema=schema, name=name, mode=mode)


def output_for_run(config: Any, model: Any, output_type: Any, mode: Any) -> OutputSpec | None:
    """The run options ``output_type``/``output_mode`` resolved against the
    provider of the run's model (``None`` without ``output_type``)."""
    if output_type is None:
        if mode != "auto":
            raise ConfigError("run option output_mode applies only with output_type")
        return None
    return build_output_spec(output_type, mode, config.provider_for(model), config.tools)
