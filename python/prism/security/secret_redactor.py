"""What a redactor is, and the one check that a caller passed one.

The bottom of the redaction stack: no Prism imports, so ``prism.errors``
(which redacts every error info it builds) and ``prism.security.redaction``
(which builds redactors and raises Prism errors) both stand on it without
importing each other. ``prism.security.redaction`` re-exports every name.
"""

from __future__ import annotations

from typing import Final, Protocol, TypeVar, runtime_checkable

_T = TypeVar("_T")

__all__ = ["DEFAULT_MASK", "NOOP_REDACTOR", "NoopRedactor", "SecretRedactor", "require_redactor"]

DEFAULT_MASK = "[REDACTED]"


@runtime_checkable
class SecretRedactor(Protocol):
    """What every redactor offers; the native ``Redactor`` and ``NoopRedactor`` both fit."""

    @property
    def mask(self) -> str: ...

    def __len__(self) -> int: ...

    def contains(self, text: str) -> bool: ...

    def redact_text(self, text: str) -> str: ...

    def redact_value(self, value: _T) -> _T: ...


class NoopRedactor:
    """Stands in when no secrets are known, so callers never branch on ``None``."""

    __slots__ = ("_mask",)

    def __init__(self, mask: str = DEFAULT_MASK) -> None:
        self._mask = mask

    @property
    def mask(self) -> str:
        return self._mask

    def __len__(self) -> int:
        return 0

    def contains(self, text: str) -> bool:
        return False

    def redact_text(self, text: str) -> str:
        return text

    def redact_value(self, value: _T) -> _T:
        return value

    def settled_length(self, text: str) -> int:
        return len(text)

    def __repr__(self) -> str:
        return "NoopRedactor()"


NOOP_REDACTOR: Final[SecretRedactor] = NoopRedactor()
"""The shared redactor for "no secrets"; pass it where a redactor is required."""


def require_redactor(redactor: object, *, owner: str) -> SecretRedactor:
    """``redactor`` itself, or a TypeError naming ``owner`` when it is None, a
    bare list of secrets, or anything else without the redactor methods."""
    if redactor is None or not all(
        callable(getattr(redactor, name, None)) for name in ("redact_text", "redact_value")
    ):
        hint = (
            " (build one with create_redactor(secrets))"
            if isinstance(redactor, list | tuple | set | frozenset | str)
            else ""
        )
        raise TypeError(
            f"{owner}: redactor must be a SecretRedactor, got {type(redactor).__name__}{hint}; "
            "pass NOOP_REDACTOR when there are no secrets"
        )
    return redactor  # type: ignore[return-value]
