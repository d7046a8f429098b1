"""Reference session-file parser: split lines, json.loads, validate per kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KINDS = ("message", "summary", "model_change", "custom", "compaction", "label")


class Invalid(Exception):
    pass


def _need(obj: dict[str, Any], field: str, label: str) -> Any:
    if field not in obj:
        raise Invalid(f"missing field '{label}'")
    return obj[field]


def _need_str(obj: dict[str, Any], field: str, label: str) -> str:
    value = _need(obj, field, label)
    if not isinstance(value, str):
        raise Invalid(f"field '{label}' must be a string")
    return value


def _need_obj(obj: dict[str, Any], field: str, label: str) -> dict[str, Any]:
    value = _need(obj, field, label)
    if not isinstance(value, dict):
        raise Invalid(f"field '{label}' must be an object")
    return value


def validate_entry(entry: Any) -> None:
    """Raises Invalid(reason) with the native parser's reasons."""
    if not isinstance(entry, dict):
        raise Invalid("entry is not a JSON object")
    for field in ("id", "sessionId"):
        value = _need(entry, field, field)
        if not isinstance(value, str) or not value:
            raise Invalid(f"field '{field}' must be a non-empty string")
    parent = _need(entry, "parentId", "parentId")
    if parent is not None and not isinstance(parent, str):
        raise Invalid("field 'parentId' must be a string or null")
    kind = _need_str(entry, "kind", "kind")
    if "createdAt" in entry and not isinstance(entry["createdAt"], str):
        raise Invalid("field 'createdAt' must be a string")
    if "metadata" in entry and not isinstance(entry["metadata"], dict):
        raise Invalid("field 'metadata' must be an object")
    if kind == "message":
        message = _need_obj(entry, "message", "message")
        _need_str(message, "role", "message.role")
        content = _need(message, "content", "message.content")
        if not isinstance(content, list):
            raise Invalid("field 'message.content' must be a list")
        for i, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise Invalid(
                    f"field 'message.content[{i}]' must be an object with a string 'type'"
                )
    elif kind == "summary":
        _need_str(entry, "summary", "summary")
    elif kind == "model_change":
        model = _need_obj(entry, "model", "model")
        _need_str(model, "provider", "model.provider")
        _need_str(model, "model", "model.model")
    elif kind == "custom":
        _need_str(entry, "customType", "customType")
    elif kind == "compaction":
        _need_str(entry, "summary", "summary")
        data = _need_obj(entry, "data", "data")
        ids = _need(data, "keepEntryIds", "data.keepEntryIds")
        if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
            raise Invalid("field 'data.keepEntryIds' must be a list of strings")
        through = data.get("throughEntryId")
        if through is not None and not isinstance(through, str):
            raise Invalid("field 'data.throughEntryId' must be a string or null")
    elif kind == "label":
        _need_str(entry, "label", "label")
        if "targetId" in entry and not isinstance(entry["targetId"], str):
            raise Invalid("field 'targetId' must be a string")
    else:
        raise Invalid(f"unknown kind '{kind[:40]}'")


BOM = b"\xef\xbb\xbf"
BOM_REASON = (
    "byte order mark at the start of a line (a BOM is allowed only at the start of the file)"
)
RAW_EXCERPT_CHARS = 256


def raw_excerpt(line: bytes) -> str:
    """At most 256 code points of a bad line, ``...`` appended when cut."""
    text = line[: RAW_EXCERPT_CHARS * 4].decode("utf-8", "replace")
    if len(text) > RAW_EXCERPT_CHARS or len(line) > RAW_EXCERPT_CHARS * 4:
        return text[:RAW_EXCERPT_CHARS] + "..."
    return text


def parse_session_entries(
    data: bytes, *, first_line: int = 1
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Same outcome as the native parser; JSON syntax reasons differ in wording
    (they come from json.loads) but start with ``invalid JSON:``. A BOM is
    dropped only at the start of the file (``first_line == 1``)."""
    if first_line == 1 and data.startswith(BOM):
        data = data[3:]
    entries: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for index, raw_line in enumerate(lines):
        number = first_line + index
        line = raw_line[:-1] if raw_line.endswith(b"\r") else raw_line
        if not line.strip(b" \t\r"):
            continue
        raw = raw_excerpt(line)
        if line.startswith(BOM):
            errors.append({"line": number, "reason": BOM_REASON, "raw": raw})
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(
                {"line": number, "reason": f"invalid UTF-8 at byte {exc.start}", "raw": raw}
            )
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            errors.append({"line": number, "reason": f"invalid JSON: {exc}", "raw": raw})
            continue
        try:
            validate_entry(value)
        except Invalid as exc:
            errors.append({"line": number, "reason": str(exc), "raw": raw})
            continue
        entries.append(value)
    return entries, errors


def read_session_entries(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return parse_session_entries(Path(path).read_bytes())
