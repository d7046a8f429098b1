"""Exact-secret redaction for extension, command and resource errors.

Uses the native Aho-Corasick ``Redactor``; only when the native module lacks
it (a partial build) does it fall back to plain longest-first
``str.replace``, so errors are still redacted. Imported lazily so this module
always imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prism.errors import ConfigError

MASK = "[REDACTED]"
# Mirrors prism._native.MIN_SECRET_LENGTH for builds without the native module.
FALLBACK_MIN_SECRET_LENGTH = 4

TextRedactor = Callable[[str], str]


def _identity(text: str) -> str:
    return text


def make_text_redactor(secrets: Iterable[str]) -> TextRedactor:
    """A ``str -> str`` redactor for ``secrets`` (empty strings ignored).

    A secret shorter than ``MIN_SECRET_LENGTH`` raises ``ConfigError``, as
    ``prism.security.redaction.create_redactor`` does: masking it would
    shred ordinary text, and skipping it would leak it."""
    if isinstance(secrets, str):
        # A bare string would otherwise become one secret per character.
        secrets = (secrets,)
    unique = sorted({s for s in secrets if isinstance(s, str) and s}, key=len, reverse=True)
    if not unique:
        return _identity
    try:
        from prism._native import Redactor
    except ImportError:
        return _fallback(unique)
    try:
        native = Redactor(unique, MASK)
    except ValueError as error:
        raise ConfigError(f"cannot redact these secrets: {error}") from None
    redact: TextRedactor = native.redact_text
    return redact


def _fallback(secrets: list[str]) -> TextRedactor:
    # Only used in a partial build without the native Redactor.
    for index, secret in enumerate(secrets):
        if len(secret) < FALLBACK_MIN_SECRET_LENGTH:
            raise ConfigError(
                f"cannot redact these secrets: a secret is shorter than "
                f"{FALLBACK_MIN_SECRET_LENGTH} characters (#{index} by length)"
            )

    def redact_fallback(text: str) -> str:
        return _replace_all(text, secrets)

    return redact_fallback


def _replace_all(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_json(value: Any, redact: TextRedactor) -> Any:
    """Redact every string (keys included) of a JSON-like value, returning a copy."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v, redact) for v in value]
    return value


def describe_error(error: BaseException, redact: TextRedactor) -> str:
    """``str(error)`` redacted, or the exception type when it has no message."""
    text = str(error).strip()
    return redact(text) if text else type(error).__name__
