"""Reading the file --config names, through prism.config.files.

The CLI never looks for config on its own: only an explicit --config path is
read, and a failure names the path and the reason, never the contents.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import anyio


def _read_locally(path: str) -> dict[str, Any]:
    # Used only while prism.config.files is unavailable; same fail-closed rules.
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ValueError("file not found") from None
    except IsADirectoryError:
        raise ValueError("is a directory") from None
    except OSError as exc:
        raise ValueError(exc.strerror or type(exc).__name__) from None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise ValueError(f"invalid JSON ({reason})") from None
    if not isinstance(value, dict):
        raise ValueError(f"config must be a JSON object, got {type(value).__name__}")
    return value


def read_cli_config(path: str) -> dict[str, Any]:
    try:
        from prism.config.files import read_config_file
    except ImportError:
        return _read_locally(path)
    result: Any = read_config_file(path)
    if inspect.isawaitable(result):
        awaitable = result

        async def _wait() -> Any:
            return await awaitable

        result = anyio.run(_wait)
    if not isinstance(result, dict):  # defensive: the loader promises an object
        raise ValueError("config must be a JSON object")
    return result
