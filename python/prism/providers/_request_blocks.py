"""Block checks shared by the three request serializers (Chat Completions,
Responses, Messages): each refuses a block it cannot send with the same
message, reads an image's url or inline data the same way, and turns a
``tool_result`` into its call id and text the same way; only the wire shape
around them differs (docs/providers.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from prism.providers._http_stream import BodyError, declared_tool_name


def refuse(block: Any, index: int, role: Any, why: str) -> BodyError:
    """The error for a block the API has no place for in ``messages[index]``."""
    kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
    return BodyError(f"cannot send a {kind!r} block in messages[{index}] (role {role}): {why}")


def inline_image(block: Mapping[str, Any], index: int) -> tuple[str, str]:
    """An image block's ``(mimeType, data)``, for one given without a url."""
    data, mime = block.get("data"), block.get("mimeType")
    if not data or not mime:
        raise BodyError(f"image block in messages[{index}] needs url, or data with mimeType")
    return str(mime), str(data)


def image_url(block: Mapping[str, Any], index: int) -> str:
    """An image block's url, or its inline data as a ``data:`` url."""
    url = block.get("url")
    if url:
        return str(url)
    mime, data = inline_image(block, index)
    return f"data:{mime};base64,{data}"


def tool_result_text(block: Mapping[str, Any], index: int) -> tuple[str, str]:
    """A ``tool_result`` block's call id and result as text: a string as-is
    (what the model reads best), anything else as compact JSON."""
    call_id = block.get("toolCallId")
    if not isinstance(call_id, str) or not call_id:
        raise BodyError(f"tool_result block in messages[{index}] needs toolCallId")
    result = block.get("result")
    text = (
        result
        if isinstance(result, str)
        else json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    )
    return call_id, text


def in_band_tool_result(block: Mapping[str, Any], index: int) -> tuple[str, str]:
    """:func:`tool_result_text` for the OpenAI APIs, whose tool outputs have
    no error flag: a failed result says so in its text."""
    call_id, text = tool_result_text(block, index)
    if block.get("isError"):
        text = "Error: " + text
    return call_id, text


def tool_fields(tool: Mapping[str, Any], schema_key: str) -> dict[str, Any]:
    """A tool declaration's name, parameter schema (under ``schema_key``; an
    empty object schema when it has none) and description when it has one."""
    out: dict[str, Any] = {
        "name": declared_tool_name(tool),
        schema_key: tool.get("parameters") or {"type": "object", "properties": {}},
    }
    if tool.get("description"):
        out["description"] = tool["description"]
    return out
