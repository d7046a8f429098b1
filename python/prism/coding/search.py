"""``search`` and ``list``: regex/literal search and file listing over the
workspace, run by the native core (ripgrep's ``ignore`` and ``grep-*``
crates) with the GIL released. ``.gitignore``-aware; ``.git`` is never
searched; binary files are skipped; output is sorted and capped."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from prism import _native
from prism.coding.workspace import CodingToolError, CodingWorkspace
from prism.tools.definition import ToolContext, ToolDefinition

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "A regex (Rust syntax) or literal text.",
        },
        "path": {"type": "string", "description": "Directory to search (default: the workspace)."},
        "literal": {"type": "boolean"},
        "ignore_case": {"type": "boolean"},
        "glob": {
            "type": "array",
            "items": {"type": "string"},
            "description": "File globs to include (`*.py`); `!` excludes.",
        },
        "context": {"type": "integer", "minimum": 0, "maximum": 10},
        "hidden": {"type": "boolean", "description": "Also search dot-files."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}
LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: the workspace)."},
        "glob": {"type": "array", "items": {"type": "string"}},
        "hidden": {"type": "boolean"},
    },
    "additionalProperties": False,
}


SearchFinder = Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""Runs a search: the checked directory and the tool's arguments in, the
native ``search_files`` result shape out (``files`` of ``path`` and
``lines``, ``total_matches``, ``files_searched``, ``truncated``)."""
ListFinder = Callable[[str, dict[str, Any]], Awaitable[tuple[Sequence[str], int, bool]]]
"""Runs a listing: the checked directory and the tool's arguments in; the
paths (newest first), how many files matched in all, and whether the paths
were cut."""


def _directory(ws: CodingWorkspace, args: dict[str, Any]) -> str:
    real = ws.resolve(args.get("path", "."))
    info = ws.backend.stat(str(real))
    if info is None or not info.is_dir:
        raise CodingToolError(f"{ws.relative(real)!r} is not a directory")
    return str(real)


def _prefix(ws: CodingWorkspace, directory: str) -> str:
    rel = ws.relative(directory)
    return "" if rel == "." else rel + "/"


def _format_hits(found: Mapping[str, Any], prefix: str) -> str:
    rows: list[str] = []
    for hit in found["files"]:
        rows.append(f"{prefix}{hit['path']}")
        previous = 0
        for number, text, is_match in hit["lines"]:
            if previous and number > previous + 1:
                rows.append("  --")
            rows.append(f"  {number}{':' if is_match else '-'}{text[:500]}")
            previous = number
    summary = (
        f"[{found['total_matches']} matching lines in {len(found['files'])} files "
        f"({found['files_searched']} searched)"
    )
    if found["truncated"]:
        summary += "; output capped, narrow the pattern or the globs"
    return "\n".join([*rows, summary + "]"]) if rows else "[no matches]"


def search_tool_over(
    ws: CodingWorkspace, find: SearchFinder, *, name: str, description: str
) -> ToolDefinition:
    """The ``search`` tool with ``find`` doing the searching (on the host, or
    inside a sandbox); the path checks, authorisation and output are the
    same wherever it runs."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        directory = _directory(ws, args)
        await ws.authorize("read", ctx, name, paths=[directory])
        return _format_hits(await find(directory, args), _prefix(ws, directory))

    return ToolDefinition(
        name, execute, description=description, parameters=SEARCH_SCHEMA, idempotent=True
    )


def list_tool_over(
    ws: CodingWorkspace, find: ListFinder, *, name: str, description: str
) -> ToolDefinition:
    """The ``list`` tool with ``find`` doing the listing (see
    :func:`search_tool_over`)."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        directory = _directory(ws, args)
        await ws.authorize("read", ctx, name, paths=[directory])
        paths, total, truncated = await find(directory, args)
        prefix = _prefix(ws, directory)
        rows = [f"{prefix}{path}" for path in paths]
        if truncated:
            rows.append(f"[{total} files; showing the newest {len(paths)}]")
        return "\n".join(rows) if rows else "[no files]"

    return ToolDefinition(
        name, execute, description=description, parameters=LIST_SCHEMA, idempotent=True
    )


def search_tool(ws: CodingWorkspace, *, name: str = "search") -> ToolDefinition:
    async def find(directory: str, args: dict[str, Any]) -> Mapping[str, Any]:
        try:
            return _native.search_files(
                directory,
                args["pattern"],
                literal=bool(args.get("literal", False)),
                ignore_case=bool(args.get("ignore_case", False)),
                globs=list(args.get("glob", [])),
                context=int(args.get("context", 0)),
                max_per_file=ws.limits.search_max_per_file,
                max_total=ws.limits.search_max_total,
                max_filesize=ws.limits.max_file_bytes,
                hidden=bool(args.get("hidden", False)),
            )
        except ValueError as error:
            raise CodingToolError(str(error)) from None

    return search_tool_over(
        ws,
        find,
        name=name,
        description=(
            "Search file contents (regex or literal) under a directory, .gitignore-aware, "
            "with glob filters and context lines; sorted by path, capped."
        ),
    )


def list_tool(ws: CodingWorkspace, *, name: str = "list") -> ToolDefinition:
    async def find(directory: str, args: dict[str, Any]) -> tuple[Sequence[str], int, bool]:
        try:
            found = _native.list_files(
                directory,
                list(args.get("glob", [])),
                hidden=bool(args.get("hidden", False)),
                max=ws.limits.list_max,
            )
        except ValueError as error:
            raise CodingToolError(str(error)) from None
        return [path for path, _, _ in found["files"]], found["total"], found["truncated"]

    return list_tool_over(
        ws,
        find,
        name=name,
        description="List files under a directory by glob, newest first, .gitignore-aware.",
    )
