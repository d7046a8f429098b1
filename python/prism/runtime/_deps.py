"""Thin adapters over the runtime's collaborators (retry, tools dispatch,
assembly, compaction). Each looks its module up once; while a sibling module
is not in the tree yet, a minimal private fallback stands in so the session
runtime stays usable and testable."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from prism.contracts import Message, ProviderRequest
from prism.errors import ConfigError
from prism.retry import RetryOptions


@cache
def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# --- retry ---------------------------------------------------------------------


def coerce_retry_options(value: Any) -> RetryOptions:
    if value is True:
        return RetryOptions()
    if isinstance(value, RetryOptions):
        return value
    if isinstance(value, Mapping):
        return RetryOptions.from_json(value)
    raise ConfigError("retry must be RetryOptions, a dict, True, False or None")


# --- compaction ------------------------------------------------------------------


def coerce_compaction_options(value: Any) -> Any:
    real = _module("prism.compaction")
    if real is None:
        if isinstance(value, Mapping):
            return dict(value)
        return value
    return real.coerce_compaction_options(value)


def compaction_module() -> Any:
    return _module("prism.compaction")


# --- assembly ------------------------------------------------------------------------


def _system_message(text: str) -> Message:
    return {"role": "system", "content": [{"type": "text", "text": text}]}


async def assemble_provider_input(**options: Any) -> ProviderRequest:
    """``prism.assembly.assemble_provider_input`` when present, else a bare
    system + summaries + history composition (no middleware, no context)."""
    real = _module("prism.assembly")
    if real is not None and hasattr(real, "assemble_provider_input"):
        request: ProviderRequest = await real.assemble_provider_input(**options)
        return request
    messages: list[Message] = [
        _system_message(str(t)) for t in options.get("system_instructions") or ()
    ]
    messages.extend(_system_message(f"Conversation summary:\n{t}") for t in options["summaries"])
    messages.extend(options["history"])
    out: ProviderRequest = {"model": options["model"], "messages": messages}
    tools = options.get("tools")
    if tools:
        out["tools"] = list(tools)
    if options.get("metadata"):
        out["metadata"] = dict(options["metadata"])
    return out


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Streamed tool-call arguments -> (dict, error message or None)."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return {}, f"tool call arguments are not valid JSON: {error.msg}"
    if not isinstance(value, dict):
        return {}, "tool call arguments must be a JSON object"
    return value, None
