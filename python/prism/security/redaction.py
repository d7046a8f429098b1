"""Exact-secret redaction at Prism's boundaries (events, entries, errors, logs).

The matching itself is the native ``Redactor`` (Aho-Corasick, built once per
secret set); this module picks it or a no-op, and offers the small helpers the
provider adapters and the runtime call on error infos and events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar, runtime_checkable

from prism.contracts import ErrorInfo
from prism.errors import ConfigError

_T = TypeVar("_T")

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

    def __repr__(self) -> str:
        return "NoopRedactor()"


def normalize_secrets(secrets: Iterable[str | None] | None) -> tuple[str, ...]:
    """Drop empty/None entries and duplicates, keeping first-seen order."""
    if secrets is None:
        return ()
    if isinstance(secrets, str):
        # A bare string would otherwise be redacted character by character.
        secrets = (secrets,)
    seen: dict[str, None] = {}
    for secret in secrets:
        if secret is None:
            continue
        if not isinstance(secret, str):
            raise TypeError(f"secrets must be strings, got {type(secret).__name__}")
        if secret:
            seen.setdefault(secret, None)
    return tuple(seen)


def create_redactor(
    secrets: Iterable[str | None] | None = (), mask: str = DEFAULT_MASK
) -> SecretRedactor:
    """Return the native ``Redactor`` for ``secrets``, or a ``NoopRedactor`` if none.

    Empty strings and ``None`` are ignored (an unset optional credential is not
    a secret); duplicates are folded. A secret shorter than
    ``prism._native.MIN_SECRET_LENGTH`` raises ConfigError.
    """
    if not isinstance(mask, str):
        raise TypeError(f"mask must be a string, got {type(mask).__name__}")
    values = normalize_secrets(secrets)
    if not values:
        return NoopRedactor(mask)
    # Imported lazily: the native module is optional at import time of this file.
    from prism._native import Redactor

    try:
        redactor: SecretRedactor = Redactor(values, mask)
    except ValueError as exc:
        # e.g. a secret shorter than MIN_SECRET_LENGTH: masking it would shred
        # ordinary text, and skipping it would leak it. The native message
        # names the secret by position only.
        raise ConfigError(f"cannot redact these secrets: {exc}") from None
    return redactor


def redact_error_info(info: ErrorInfo, redactor: SecretRedactor | None) -> ErrorInfo:
    """A redacted copy of ``info``: message and details (recursively)."""
    if redactor is None or len(redactor) == 0:
        return info
    out: ErrorInfo = {**info}
    out["message"] = redactor.redact_text(info["message"])
    details = info.get("details")
    if details is not None:
        out["details"] = redactor.redact_value(details)
    return out


def redact_event(event: _T, redactor: SecretRedactor | None) -> _T:
    """A redacted copy of a provider/agent event (any JSON-shaped dict).

    Events are never mutated in place: history and subscribers may hold them.
    """
    if redactor is None or len(redactor) == 0:
        return event
    return redactor.redact_value(event)
