"""Memory ids: 12 lowercase hex characters, random, checked before any lookup."""

from __future__ import annotations

import secrets as _random

from prism.errors import PrismError

HEX_DIGITS = "0123456789abcdef"


class InvalidMemoryIdError(PrismError, ValueError):
    """A memory id that is not 12 lowercase hex characters (nothing was looked up)."""

    code = "invalid_memory_id"


def create_memory_id() -> str:
    """A fresh random id matching ``^[a-f0-9]{12}$`` (48 random bits)."""
    return _random.token_hex(6)


def is_memory_id(value: object) -> bool:
    """True for a string of exactly 12 lowercase hex characters."""
    # str.strip with the alphabet leaves "" only when every character is in it;
    # several times faster than the regex on the fold's hot path.
    return isinstance(value, str) and len(value) == 12 and not value.strip(HEX_DIGITS)


def require_memory_id(value: object, where: str = "memory id") -> str:
    """``value`` when it is a memory id, else ``InvalidMemoryIdError`` that
    shows at most a short prefix of what was given (it may be arbitrary input)."""
    if is_memory_id(value):
        assert isinstance(value, str)
        return value
    if isinstance(value, str):
        shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
    else:
        shown = f"a {type(value).__name__}"
    raise InvalidMemoryIdError(f"{where} must be 12 lowercase hex characters, got {shown}")
