"""Turning what a caller passes to ``run``/``steer``/``follow_up`` into messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.contracts import Message
from prism.errors import ConfigError

_ROLES = frozenset({"system", "user", "assistant", "tool"})
_INPUT_HINT = "input must be a non-empty string, a message dict, or a list of message dicts"


def _check_message(value: Any, where: str) -> Message:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a message dict, got {type(value).__name__}")
    role = value.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise ConfigError(
            f"{where}.role must be one of {sorted(_ROLES)}, got {value.get('role')!r}"
        )
    content = value.get("content")
    if not isinstance(content, list) or not all(
        isinstance(block, Mapping) and isinstance(block.get("type"), str) for block in content
    ):
        raise ConfigError(f"{where}.content must be a list of content blocks with a 'type'")
    return dict(value)  # type: ignore[return-value]


def _check_text(value: Any, where: str) -> None:
    """Every string in the input must be encodable as UTF-8: a lone
    surrogate would fail the run later, at the store or the provider, after
    ``run_started``. Checked before the run starts instead."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ConfigError(
                f"{where} holds a lone surrogate (U+{ord(value[error.start]):04X} at index"
                f" {error.start}), which is not valid Unicode text"
            ) from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_text(key, where)
            _check_text(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_text(item, f"{where}[{index}]")


def normalize_input(value: Any) -> list[Message]:
    """A string becomes one user text message; messages are kept
    (shallow-copied). ``ConfigError`` names what is wrong."""
    if isinstance(value, str):
        if not value:
            raise ConfigError(_INPUT_HINT)
        _check_text(value, "input")
        return [{"role": "user", "content": [{"type": "text", "text": value}]}]
    if isinstance(value, Mapping):
        message = _check_message(value, "input")
        _check_text(message, "input")
        return [message]
    if isinstance(value, Sequence) and not isinstance(value, bytes) and value:
        messages = [_check_message(item, f"input[{i}]") for i, item in enumerate(value)]
        _check_text(messages, "input")
        return messages
    raise ConfigError(_INPUT_HINT)
