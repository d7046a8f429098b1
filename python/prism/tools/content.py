"""Tool results that carry images next to their JSON value.

A tool returns :class:`ToolOutput` (a JSON ``value`` plus
:class:`ImageContent` items) instead of a bare value; dispatch turns it into a
``ToolResult`` whose ``images`` are ``{"type": "image", "data": <base64>,
"mimeType": ...}`` blocks, the same shape as an ``image`` content block. The
session stores them as ``image`` blocks right after the ``tool_result`` block
of the tool message, so every store, estimator and compaction strategy that
knows image blocks handles them unchanged (docs/tools.md).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from prism.contracts import ImageBlock, ToolResult

IMAGE_MIME_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every adapter's provider accepts as base64 input."""


@dataclass(frozen=True, slots=True)
class ImageContent:
    """One image: raw ``bytes`` or base64 text, and its MIME type.

    Invalid input fails at construction (a tool raising it gets a
    ``tool_error`` result): an unknown type, empty data, or text that is not
    strict base64 would make the provider refuse the whole request later, on
    every turn, since the image stays in the history."""

    data: bytes | str
    mime_type: str
    base64_data: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mime_type not in IMAGE_MIME_TYPES:
            raise ValueError(
                f"image mime_type must be one of {', '.join(sorted(IMAGE_MIME_TYPES))}, "
                f"got {self.mime_type!r}"
            )
        if isinstance(self.data, bytes | bytearray | memoryview):
            raw = bytes(self.data)
            if not raw:
                raise ValueError("image data is empty")
            encoded = base64.b64encode(raw).decode("ascii")
        elif isinstance(self.data, str):
            if not self.data:
                raise ValueError("image data is empty")
            try:
                base64.b64decode(self.data, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("image data text is not valid base64") from None
            encoded = self.data
        else:
            raise TypeError(
                f"image data must be bytes or base64 str, got {type(self.data).__name__}"
            )
        object.__setattr__(self, "base64_data", encoded)

    def to_block(self) -> ImageBlock:
        return {"type": "image", "data": self.base64_data, "mimeType": self.mime_type}


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns to send images with its result: ``value`` is the
    usual JSON value (typically a line of text about the images)."""

    value: Any
    images: Sequence[ImageContent] = ()

    def __post_init__(self) -> None:
        images = tuple(self.images)
        for index, image in enumerate(images):
            if not isinstance(image, ImageContent):
                raise TypeError(
                    f"ToolOutput.images[{index}] must be ImageContent, got {type(image).__name__}"
                )
        object.__setattr__(self, "images", images)


def image_blocks_problem(images: Any) -> str | None:
    """Why ``images`` (a result's ``images``, say after middleware) are not
    a list of image blocks with base64 ``data`` and a known type, or None."""
    if not isinstance(images, list):
        return f"'images' must be a list, got {type(images).__name__}"
    for index, image in enumerate(images):
        if not isinstance(image, dict) or image.get("type") != "image":
            return f"images[{index}] is not an image block"
        if image.get("mimeType") not in IMAGE_MIME_TYPES or not isinstance(image.get("data"), str):
            return f"images[{index}] needs base64 'data' and a 'mimeType' in {sorted(IMAGE_MIME_TYPES)}"
    return None


def elide_image_data(result: ToolResult) -> ToolResult:
    """``result`` for an event: each image's base64 ``data`` is replaced by
    its length (``dataLength``), so a ``tool_result`` event, a ``--mode json``
    line or a log stays small; the session store keeps the data. A result
    without images is returned as is (no copy)."""
    images = result.get("images")
    if not images:
        return result
    shown: list[Any] = []
    for image in images:
        if isinstance(image, dict) and isinstance(image.get("data"), str):
            slim = {k: v for k, v in image.items() if k != "data"}
            slim["dataLength"] = len(image["data"])
            shown.append(slim)
        else:
            shown.append(image)
    elided = dict(result)
    elided["images"] = shown
    return elided  # type: ignore[return-value]
