"""``read``, ``write`` and ``edit``: the file tools (names and the ``path``
argument are what the LLM compaction package tracks; keep them).

File I/O is small per call and bounded by ``CodingLimits.max_file_bytes``,
but a 16 MiB read still blocks for milliseconds, so the disk work runs in a
worker thread (``anyio.to_thread``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from prism.coding.backend import FileStat
from prism.coding.images import image_output
from prism.coding.text import (
    Decoded,
    decode,
    encode,
    image_type,
    line_of,
    nearest_candidates,
    number_lines,
    small_diff,
)
from prism.coding.workspace import CodingToolError, CodingWorkspace
from prism.tools.content import ToolOutput
from prism.tools.definition import ToolContext, ToolDefinition

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "File path, relative to the workspace or absolute.",
        },
        "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Number of lines."},
    },
    "required": ["path"],
    "additionalProperties": False,
}
WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string", "description": "The whole new file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}
_EDIT_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "old_string": {"type": "string", "minLength": 1},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"},
    },
    "required": ["old_string", "new_string"],
    "additionalProperties": False,
}
EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "old_string": {"type": "string", "description": "Exact text to replace (must occur once)."},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"},
        "edits": {
            "type": "array",
            "items": _EDIT_ITEM,
            "minItems": 1,
            "description": "Several edits applied in order, all or nothing.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class _Loaded:
    data: bytes
    info: FileStat
    text: Decoded


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _read_file(ws: CodingWorkspace, real: Path) -> tuple[bytes, FileStat]:
    """An existing regular file's bytes within the size limit (worker thread)."""
    rel = ws.relative(real)
    info = ws.backend.stat(str(real))
    if info is None:
        raise CodingToolError(f"{rel!r} does not exist")
    if info.is_dir:
        raise CodingToolError(f"{rel!r} is a directory; use the list tool")
    if not info.is_file:
        raise CodingToolError(f"{rel!r} is not a regular file")
    limit = ws.limits.max_file_bytes
    if info.size > limit:
        mime = image_type(ws.backend.read_bytes(str(real), 16))
        kind = f"an image ({mime}) of" if mime else ""
        raise CodingToolError(
            f"{rel!r} is {kind}{' ' if kind else ''}{_size(info.size)}, over the {_size(limit)} "
            "limit for reading; use search to find the part you need"
        )
    return ws.backend.read_bytes(str(real), limit + 1), info


def _decoded(ws: CodingWorkspace, real: Path, data: bytes, info: FileStat) -> _Loaded:
    rel = ws.relative(real)
    mime = image_type(data)
    if mime is not None:
        raise CodingToolError(f"{rel!r} is an image ({mime}, {_size(len(data))}), not text")
    decoded = decode(data)
    if decoded is None:
        raise CodingToolError(f"{rel!r} looks binary (it holds NUL bytes); not shown")
    return _Loaded(data, info, decoded)


def _load(ws: CodingWorkspace, real: Path) -> _Loaded:
    """Read and decode an existing file within the limits (worker thread)."""
    return _decoded(ws, real, *_read_file(ws, real))


def _load_for_read(ws: CodingWorkspace, real: Path) -> _Loaded | ToolOutput:
    """Like ``_load``, but an image comes back as the image itself."""
    data, info = _read_file(ws, real)
    mime = image_type(data)
    if mime is not None:
        return image_output(ws.relative(real), data, mime, ws.limits.read_max_image_bytes)
    return _decoded(ws, real, data, info)


def read_tool(ws: CodingWorkspace, *, name: str = "read") -> ToolDefinition:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        real = ws.resolve(args["path"])
        await ws.authorize("read", ctx, name, paths=[str(real)])
        loaded = await anyio.to_thread.run_sync(_load_for_read, ws, real)
        if isinstance(loaded, ToolOutput):
            return loaded
        limits = ws.limits
        offset = int(args.get("offset", 1))
        limit = min(int(args.get("limit", limits.read_max_lines)), limits.read_max_lines)
        body, _, _, notes = number_lines(
            loaded.text.text,
            offset,
            limit,
            limits.read_max_line_chars,
            limits.read_max_output_bytes,
            loaded.text.lines,
        )
        ws.mark_read(ctx, str(real), loaded.info)
        if loaded.text.note:
            notes.insert(0, loaded.text.note)
        if not body:
            notes.append("the file is empty" if not loaded.text.text else "no lines at that offset")
        return body + "".join(f"\n[{note}]" for note in notes)

    return ToolDefinition(
        name,
        execute,
        description=(
            "Read a text file as numbered lines. Large files: pass offset/limit. "
            "PNG, JPEG, GIF and WebP images come back as the image itself. "
            "Reading a file is required before writing or editing it."
        ),
        parameters=READ_SCHEMA,
        idempotent=True,
    )


def _prepare_target(ws: CodingWorkspace, real: Path) -> None:
    ws.refuse_protected(real)
    parent = real.parent
    info = ws.backend.stat(str(parent))
    if info is None:
        ws.backend.make_dirs(str(parent))
    elif not info.is_dir:
        raise CodingToolError(f"{ws.relative(parent)!r} is not a directory")


def write_tool(ws: CodingWorkspace, *, name: str = "write") -> ToolDefinition:
    def write_sync(ctx: ToolContext, real: Path, content: str) -> tuple[bytes, str]:
        info = ws.backend.stat(str(real))
        existing: Decoded | None = None
        mode: int | None = None
        if info is not None:
            if not info.is_file:
                raise CodingToolError(f"{ws.relative(real)!r} is not a regular file")
            ws.check_fresh(ctx, str(real), info)
            existing = _load(ws, real).text
            mode = info.mode
        _prepare_target(ws, real)
        data = encode(content, existing)
        ws.backend.write_atomic(str(real), data, mode)
        new_info = ws.backend.stat(str(real))
        if new_info is not None:
            ws.mark_read(ctx, str(real), new_info)
        return data, "created" if info is None else "modified"

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        real = ws.resolve(args["path"])
        ws.refuse_protected(real)
        action = await ws.authorize("write", ctx, name, paths=[str(real)])
        real = Path(action.paths[0]) if action.paths else real
        ws.refuse_protected(real)
        data, kind = await anyio.to_thread.run_sync(write_sync, ctx, real, args["content"])
        await ws.file_changed(ctx, str(real), kind, data)
        return f"{kind} {ws.relative(real)} ({len(data)} bytes)"

    return ToolDefinition(
        name,
        execute,
        description=(
            "Write a whole file (atomic). An existing file must have been read first "
            "and not changed since; prefer edit for changes to part of a file."
        ),
        parameters=WRITE_SCHEMA,
    )


def _edits_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    single = "old_string" in args or "new_string" in args
    if single and "edits" in args:
        raise CodingToolError("give either old_string/new_string or edits, not both")
    if "edits" in args:
        return list(args["edits"])
    if "old_string" not in args or "new_string" not in args:
        raise CodingToolError("edit needs old_string and new_string (or edits)")
    return [
        {
            "old_string": args["old_string"],
            "new_string": args["new_string"],
            "replace_all": bool(args.get("replace_all", False)),
        }
    ]


def _apply_one(text: str, edit: dict[str, Any], number: int, rel: str) -> tuple[str, str]:
    old, new = edit["old_string"], edit["new_string"]
    label = f"edit {number}" if number else "edit"
    if old == "":
        raise CodingToolError(f"{label}: old_string is empty; give the exact text to replace")
    if old == new:
        raise CodingToolError(f"{label}: old_string and new_string are the same")
    old = old.replace("\r\n", "\n")
    new = new.replace("\r\n", "\n")
    first = text.find(old)
    if first < 0:
        near = nearest_candidates(text, old)
        hint = ("; nearest: " + "; ".join(near)) if near else ""
        raise CodingToolError(f"{label}: old_string not found in {rel!r}{hint}")
    if edit.get("replace_all"):
        return text.replace(old, new), small_diff(text, old, new, first)
    second = text.find(old, first + 1)
    if second >= 0:
        count = text.count(old)
        lines = [line_of(text, first), line_of(text, second)]
        raise CodingToolError(
            f"{label}: old_string occurs {count} times in {rel!r} (lines {lines[0]}, {lines[1]}"
            f"{', ...' if count > 2 else ''}); add context to make it unique or set replace_all"
        )
    return text[:first] + new + text[first + len(old) :], small_diff(text, old, new, first)


def edit_tool(ws: CodingWorkspace, *, name: str = "edit") -> ToolDefinition:
    def edit_sync(
        ctx: ToolContext, real: Path, edits: list[dict[str, Any]]
    ) -> tuple[bytes, list[str]]:
        rel = ws.relative(real)
        info = ws.backend.stat(str(real))
        if info is None:
            raise CodingToolError(f"{rel!r} does not exist (it may have been deleted); use write")
        ws.check_fresh(ctx, str(real), info)
        loaded = _load(ws, real)
        text = loaded.text.text
        diffs: list[str] = []
        for number, edit in enumerate(edits, start=1 if len(edits) > 1 else 0):
            text, diff = _apply_one(text, edit, number, rel)
            diffs.append(diff)
        data = encode(text, loaded.text)
        if ws.backend.stat(str(real)) != info:
            raise CodingToolError(f"{rel!r} changed on disk while editing; read it again")
        ws.backend.write_atomic(str(real), data, info.mode)
        new_info = ws.backend.stat(str(real))
        if new_info is not None:
            ws.mark_read(ctx, str(real), new_info)
        return data, diffs

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        edits = _edits_of(args)
        real = ws.resolve(args["path"])
        ws.refuse_protected(real)
        action = await ws.authorize("edit", ctx, name, paths=[str(real)])
        real = Path(action.paths[0]) if action.paths else real
        ws.refuse_protected(real)
        data, diffs = await anyio.to_thread.run_sync(edit_sync, ctx, real, edits)
        await ws.file_changed(ctx, str(real), "modified", data)
        return f"edited {ws.relative(real)}\n" + "\n".join(diffs)

    return ToolDefinition(
        name,
        execute,
        description=(
            "Replace exact text in a file that was read first. old_string must occur exactly "
            "once unless replace_all; edits apply in order, all or nothing."
        ),
        parameters=EDIT_SCHEMA,
    )
