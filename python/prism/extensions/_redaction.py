"""Exact-secret redaction for extension, command and resource errors.

Uses the native Aho-Corasick ``Redactor`` when the extension module provides
it; otherwise falls back to plain longest-first ``str.replace`` so errors are
still redacted in a partial build. Imported lazily so this module always
imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

MASK = "[REDACTED]"

TextRedactor = Callable[[str], str]


def _identity(text: str) -> str:
    return text


def make_text_redactor(secrets: Iterable[str]) -> TextRedactor:
    if isinstance(secrets, str):
        # A bare string would otherwise become one secret per character.
        secrets = (secrets,)
    unique = sorted({s for s in secrets if isinstance(s, str) and s}, key=len, reverse=True)
    if not unique:
        return _identity
    try:
        from prism._native import Redactor

        native = Redactor(unique, MASK)
    except (ImportError, AttributeError, ValueError, TypeError):
        native = None
    if native is not None:
        redact_native: TextRedactor = native.redact_text
        # The native redactor may skip secrets shorter than its minimum
        # length; cover those with the fallback so no secret slips through.
        leftover = [s for s in unique if not native.contains(s)]
        if not leftover:
            return redact_native

        def redact_both(text: str) -> str:
            return _replace_all(redact_native(text), leftover)

        return redact_both

    def redact_fallback(text: str) -> str:
        return _replace_all(text, unique)

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
