"""Redaction helpers for extension, command and resource errors.

They take the redactor object the host built once (the agent's, or
``prism.security.create_redactor``); there is no second matcher here.
"""

from __future__ import annotations

from typing import Any

from prism.security.redaction import SecretRedactor


def redact_json(value: Any, redactor: SecretRedactor) -> Any:
    """Redact every string (keys included) of a JSON-like value, returning a copy."""
    if isinstance(value, str):
        return redactor.redact_text(value)
    if isinstance(value, dict):
        return {redactor.redact_text(str(k)): redact_json(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v, redactor) for v in value]
    return value


def describe_error(error: BaseException, redactor: SecretRedactor) -> str:
    """``str(error)`` redacted, or the exception type when it has no message."""
    text = str(error).strip()
    return redactor.redact_text(text) if text else type(error).__name__
