"""Images in tool results, shared by the request serializers.

A tool message holds a ``tool_result`` block followed by the ``image``
blocks the tool returned (``prism.tools.ToolOutput``). Each adapter sends
them its own way (docs/providers.md); this module finds them, and for a
model whose metadata says it takes no images (``ModelConfig.input`` without
``"image"``) swaps each for a short text note, so the model learns an image
was there instead of it vanishing silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from prism.contracts import Message


def accepts_images(model: Any) -> bool:
    """Whether the model takes image input; absent metadata means yes."""
    inputs = model.get("input") if isinstance(model, Mapping) else None
    return not isinstance(inputs, list) or "image" in inputs


def omitted_image_note(image: Mapping[str, Any], model: Any) -> str:
    name = model.get("model") if isinstance(model, Mapping) else None
    data = image.get("data")
    size = ""
    if isinstance(data, str):
        padding = len(data) - len(data.rstrip("="))
        size = f", {len(data) * 3 // 4 - padding} bytes"
    mime = image.get("mimeType") or "image"
    return f"[image omitted ({mime}{size}): model {name!r} does not accept image input]"


def omit_tool_images(messages: list[Message], model: Any) -> list[Message]:
    """``messages`` with each image in a tool message replaced by a text note
    when ``model`` takes no images; a shallow clone (stored history is never
    edited), or the same list when nothing changes."""
    if accepts_images(model) or not isinstance(messages, list):
        return messages
    out: list[Message] | None = None
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list) or message.get("role") != "tool":
            continue
        if not any(isinstance(b, Mapping) and b.get("type") == "image" for b in content):
            continue
        if out is None:
            out = list(messages)
        swapped = [
            {"type": "text", "text": omitted_image_note(b, model)}
            if isinstance(b, Mapping) and b.get("type") == "image"
            else b
            for b in content
        ]
        out[index] = cast(Message, {**message, "content": swapped})
    return messages if out is None else out
