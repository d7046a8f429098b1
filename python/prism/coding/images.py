"""Image files for ``read``: the type from magic bytes, the size from the
header, and the tool output that carries the image to the model.

Only the header is parsed (no decoder, no Pillow dependency): enough to
refuse a truncated or corrupt file before it reaches a provider. A provider
rejects an image it cannot decode with an error for the whole request, and
since the image stays in the session's history, every later turn would fail
the same way.
"""

from __future__ import annotations

import struct

from prism.coding.workspace import CodingToolError
from prism.tools.content import ImageContent, ToolOutput

# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC)
# sit in the same range but are not frames.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_dimensions(data: bytes, mime: str) -> tuple[int, int]:
    """(width, height) from the header of ``data`` (whose magic said
    ``mime``); ``ValueError`` naming what is wrong when the header is
    truncated or corrupt."""
    if mime == "image/png":
        if len(data) < 24 or data[12:16] != b"IHDR":
            raise ValueError("the PNG header (IHDR chunk) is missing or truncated")
        width, height = struct.unpack(">II", data[16:24])
    elif mime == "image/gif":
        if len(data) < 10:
            raise ValueError("the GIF header is truncated")
        width, height = struct.unpack("<HH", data[6:10])
    elif mime == "image/webp":
        width, height = _webp_dimensions(data)
    elif mime == "image/jpeg":
        width, height = _jpeg_dimensions(data)
    else:
        raise ValueError(f"{mime} is not an image type read sends")
    if width <= 0 or height <= 0:
        raise ValueError(f"the header gives an empty size ({width}x{height})")
    return width, height


def _webp_dimensions(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        b0, b1, b2, b3 = data[21:25]
        return 1 + (b0 | (b1 & 0x3F) << 8), 1 + (b1 >> 6 | b2 << 2 | (b3 & 0x0F) << 10)
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    raise ValueError("the WebP header (VP8/VP8L/VP8X chunk) is missing or truncated")


def _jpeg_dimensions(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            raise ValueError(f"the JPEG segment at byte {at} has no marker")
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            at += 2
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in _JPEG_FRAMES:
            if at + 9 > len(data):
                break
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker in (0xDA, 0xD9) or length < 2:
            raise ValueError("the JPEG has no frame header before its image data")
        at += 2 + length
    raise ValueError("the JPEG header is truncated before its frame header")


def _size(n: int) -> str:
    return (
        f"{n} bytes"
        if n < 1024
        else f"{n / 1024:.1f} KiB"
        if n < 1 << 20
        else f"{n / (1 << 20):.1f} MiB"
    )


def image_output(rel: str, data: bytes, mime: str, cap: int) -> ToolOutput:
    """What ``read`` returns for an image file: a text line and the image."""
    if len(data) > cap:
        raise CodingToolError(
            f"{rel!r} is an image ({mime}, {_size(len(data))}), over the {_size(cap)} cap for "
            "images sent to the model; resize it first (for example with the shell tool)"
        )
    try:
        width, height = image_dimensions(data, mime)
    except ValueError as error:
        raise CodingToolError(f"{rel!r} looks like {mime} but is not readable: {error}") from None
    line = f"{rel}: {mime}, {len(data)} bytes, {width}x{height} pixels (image attached)"
    return ToolOutput(line, [ImageContent(data, mime)])
