"""Checks that a value is JSON data, naming the key path of the first offender."""

from __future__ import annotations

import math
from typing import Any

from prism.errors import ConfigError


def key_path(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    if key.isidentifier():
        return f"{base}.{key}" if base else key
    return f"{base}[{key!r}]"


def describe_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    if callable(value):
        return "a callable"
    return f"a {type(value).__name__}"


def non_json_path(value: Any, path: str, depth: int = 0) -> tuple[str, str] | None:
    """The path and reason of the first non-JSON value in ``value``, if any."""
    if depth > 64:
        return path or "(root)", "nests deeper than 64 levels"
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "(root)", "is not a finite number")
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = non_json_path(item, key_path(path, index), depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path or "(root)", f"has a non-string key of type {type(key).__name__}"
            found = non_json_path(item, key_path(path, key), depth + 1)
            if found is not None:
                return found
        return None
    return path or "(root)", f"is {describe_type(value)}, not JSON data"


def require_json(value: Any, what: str, path: str = "") -> None:
    found = non_json_path(value, path)
    if found is not None:
        where, reason = found
        raise ConfigError(f"{what}: {where} {reason}")


def copy_json(value: Any) -> Any:
    """A deep copy of checked JSON data (tuples become lists)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(v) for v in value]
    return value
