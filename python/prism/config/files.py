"""Read caller-named JSON config files into config layers.

Only paths the caller names are read: nothing is discovered, scanned or
watched. Reads are synchronous because config files are small and read once
at start-up (before an event loop exists in the CLI); ``max_bytes`` caps them.
Every failure is fail-closed and raises ``ConfigFileError`` whose message
names the path and the reason, never the file's contents.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prism.config._json import describe_type
from prism.config.layers import ConfigLayer
from prism.errors import ConfigError, ConfigFileError

DEFAULT_MAX_CONFIG_BYTES = 1024 * 1024


def default_user_config_path(
    app_name: str = "prism", *, env: Mapping[str, str] | None = None
) -> Path:
    """``$XDG_CONFIG_HOME/<app>/config.json`` when that variable holds an
    absolute path (the XDG spec says to ignore relative ones), otherwise
    ``~/.config/<app>/config.json``. Computes a path; reads nothing."""
    if (
        not isinstance(app_name, str)
        or not app_name
        or app_name in (".", "..")
        or "/" in app_name
        or "\\" in app_name
        or "\0" in app_name
    ):
        raise ConfigError("app_name must be a plain directory name")
    environ = os.environ if env is None else env
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = environ.get("HOME") if env is not None else None
        base = (Path(home) if home else Path.home()) / ".config"
    return base / app_name / "config.json"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_config_file(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_CONFIG_BYTES
) -> dict[str, Any]:
    """The JSON object in ``path``. Missing files, unreadable files, files
    over ``max_bytes``, non-UTF-8 bytes, invalid JSON and non-object JSON all
    raise ``ConfigFileError`` naming the path and reason."""
    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ConfigFileError(
            f"config file {shown}: not found", path=shown, reason="not_found"
        ) from None
    except IsADirectoryError:
        raise ConfigFileError(f"config file {shown}: is a directory", path=shown) from None
    except PermissionError:
        raise ConfigFileError(f"config file {shown}: permission denied", path=shown) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigFileError(
            f"config file {shown}: cannot be read ({reason})", path=shown
        ) from None
    if len(raw) > max_bytes:
        raise ConfigFileError(f"config file {shown}: larger than {max_bytes} bytes", path=shown)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigFileError(
            f"config file {shown}: not valid UTF-8 (byte {error.start})", path=shown
        ) from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        # error.msg is the parser's reason ("Expecting value"); it never
        # quotes the document, unlike str(error) plus error.doc.
        raise ConfigFileError(
            f"config file {shown}: invalid JSON ({error.msg} at line {error.lineno} column {error.colno})",
            path=shown,
        ) from None
    except (ValueError, RecursionError) as error:
        reason = str(error) if isinstance(error, ValueError) else "nested too deeply"
        raise ConfigFileError(f"config file {shown}: invalid JSON ({reason})", path=shown) from None
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"config file {shown}: must contain a JSON object, got {describe_type(data)}",
            path=shown,
        )
    return data


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A file to read as the config layer ``name``; a missing ``optional``
    file is skipped (an optional file that exists but is invalid still fails)."""

    name: str
    path: str | os.PathLike[str]
    optional: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("config file layer name must be a non-empty string")
        if not isinstance(self.path, (str, os.PathLike)) or not os.fspath(self.path):
            raise ConfigError(f"config file {self.name!r}: path must be a non-empty path")


def load_config_files(
    files: Iterable[ConfigFile], *, max_bytes: int = DEFAULT_MAX_CONFIG_BYTES
) -> list[ConfigLayer]:
    """Read ``files`` in the given order into layers for ``merge_config_layers``.
    All files are read before anything is returned, so one bad file fails the
    whole call."""
    layers: list[ConfigLayer] = []
    for file in files:
        if not isinstance(file, ConfigFile):
            raise ConfigError(
                f"load_config_files expects ConfigFile values, got {describe_type(file)}"
            )
        try:
            data = read_config_file(file.path, max_bytes=max_bytes)
        except ConfigFileError as error:
            if file.optional and error.details.get("reason") == "not_found":
                continue
            raise
        layers.append(ConfigLayer(file.name, data))
    return layers
