"""Reference token estimation: a straightforward walk over the value."""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 100
IMAGE_TOKENS = 1000
MESSAGE_OVERHEAD_TOKENS = 4

_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_SHORT = frozenset('"\\\n\r\t\b\f')
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def format_path(path: list[str | int]) -> str:
    out = "$"
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        elif _IDENT.match(seg):
            out += "." + seg
        else:
            out += "[" + _rust_debug_str(seg[:64]) + "]"
    return out


def _rust_debug_str(s: str) -> str:
    # The native path quotes odd keys with Rust's `{:?}`; only the common
    # escapes matter for the keys tests use.
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{body}"'


class PathError(Exception):
    def __init__(self, exc_type: type[Exception], message: str, path: list[str | int]) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message
        self.path = path

    def to_exception(self) -> Exception:
        return self.exc_type(f"{self.message} at {format_path(self.path)}")


def string_length(s: str) -> int:
    extra = 0
    for ch in _ESCAPE.findall(s):
        extra += 1 if ch in _SHORT else 5
    return len(s) + 2 + extra


def _length(value: Any, depth: int, path: list[str | int]) -> int:
    if isinstance(value, str):
        return string_length(value)
    if value is None:
        return 4
    if value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        try:
            return len(int.__repr__(value))
        except ValueError as exc:
            raise PathError(ValueError, str(exc), path) from None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            shown = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
            raise PathError(
                ValueError, f"Out of range float values are not JSON compliant: {shown}", path
            )
        return len(float.__repr__(value))
    if isinstance(value, dict):
        if depth + 1 > MAX_DEPTH:
            raise PathError(ValueError, _too_deep(), path)
        total = 2 + max(len(value) - 1, 0)
        for key, item in value.items():
            if not isinstance(key, str):
                raise PathError(TypeError, f"keys must be str, not {type(key).__name__}", path)
            total += string_length(key) + 1 + _length(item, depth + 1, [*path, key])
        return total
    if isinstance(value, list | tuple):
        if depth + 1 > MAX_DEPTH:
            raise PathError(ValueError, _too_deep(), path)
        total = 2 + max(len(value) - 1, 0)
        for i, item in enumerate(value):
            total += _length(item, depth + 1, [*path, i])
        return total
    raise PathError(
        TypeError, f"Object of type {type(value).__name__} is not JSON serializable", path
    )


def _too_deep() -> str:
    return f"value nested deeper than MAX_DEPTH ({MAX_DEPTH}); is it cyclic?"


def json_length(value: Any) -> int:
    """``len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))``."""
    try:
        return _length(value, 0, [])
    except PathError as err:
        raise err.to_exception() from None


def _ceil4(n: int) -> int:
    return -(-n // 4)


def estimate_text_tokens(text: str) -> int:
    return _ceil4(len(text))


def estimate_value_tokens(value: Any) -> int:
    return _ceil4(json_length(value))


def _field(d: dict[str, Any], key: str, path: list[str | int]) -> Any:
    if key not in d:
        raise PathError(TypeError, f"missing field '{key}'", path)
    return d[key]


def _str_field(d: dict[str, Any], key: str, path: list[str | int]) -> int:
    value = _field(d, key, path)
    if not isinstance(value, str):
        raise PathError(
            TypeError, f"field '{key}' must be a str, not {type(value).__name__}", [*path, key]
        )
    return len(value)


def _dict(value: Any, what: str, path: list[str | int]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PathError(TypeError, f"{what} must be a dict, not {type(value).__name__}", path)
    return value


def _block_tokens(block: Any, path: list[str | int]) -> int:
    d = _dict(block, "content block", path)
    kind = _field(d, "type", path)
    if not isinstance(kind, str):
        raise PathError(TypeError, "field 'type' must be a str", [*path, "type"])
    if kind in ("text", "thinking"):
        chars = _str_field(d, "text", path)
    elif kind == "image":
        return IMAGE_TOKENS
    elif kind in ("tool_call", "tool_result"):
        payload = "arguments" if kind == "tool_call" else "result"
        name = _str_field(d, "name", path)
        chars = name + _length(_field(d, payload, path), 0, [*path, payload])
    else:
        chars = _length(block, 0, path)
    return _ceil4(chars)


def _message_tokens(message: Any, path: list[str | int]) -> int:
    d = _dict(message, "message", path)
    content = _field(d, "content", path)
    if not isinstance(content, list | tuple):
        raise PathError(
            TypeError,
            f"field 'content' must be a list, not {type(content).__name__}",
            [*path, "content"],
        )
    total = MESSAGE_OVERHEAD_TOKENS
    for i, block in enumerate(content):
        total += _block_tokens(block, [*path, "content", i])
    return total


def estimate_message_tokens(message: Any) -> int:
    try:
        return _message_tokens(message, [])
    except PathError as err:
        raise err.to_exception() from None


def estimate_entry_tokens(entry: Any) -> int:
    try:
        d = _dict(entry, "entry", [])
        kind = _field(d, "kind", [])
        if not isinstance(kind, str):
            raise PathError(TypeError, "field 'kind' must be a str", ["kind"])
        if kind == "message":
            return _message_tokens(_field(d, "message", []), ["message"])
        if kind in ("summary", "compaction"):
            return _ceil4(_str_field(d, "summary", [])) + MESSAGE_OVERHEAD_TOKENS
        if kind in ("model_change", "custom", "label"):
            return MESSAGE_OVERHEAD_TOKENS
        raise PathError(ValueError, f"unknown entry kind '{kind[:40]}'", ["kind"])
    except PathError as err:
        raise err.to_exception() from None
