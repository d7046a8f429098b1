"""One redactor per helper, built from what the host passed as ``secrets``.

Every helper takes ``secrets``: exact strings (built into the native
redactor once, here) or an already-built redactor object (anything with
``redact_text``/``redact_value``, such as the agent's), so a host that
configured its secrets once can hand the same object everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prism.errors import ConfigError
from prism.security.redaction import SecretRedactor, create_redactor

SecretsLike = Iterable[str] | SecretRedactor


def as_redactor(secrets: Any, where: str = "observational memory") -> SecretRedactor:
    if secrets is None:
        return create_redactor(())
    if callable(getattr(secrets, "redact_text", None)) and callable(
        getattr(secrets, "redact_value", None)
    ):
        return secrets  # type: ignore[no-any-return]
    if isinstance(secrets, str) or not isinstance(secrets, Iterable):
        raise ConfigError(f"{where}: secrets must be a list of strings or a redactor")
    values = list(secrets)
    if not all(isinstance(value, str) for value in values):
        raise ConfigError(f"{where}: secrets must be a list of strings or a redactor")
    try:
        return create_redactor(values)
    except (ConfigError, ValueError, TypeError):
        # Never the underlying message: it could describe the secret it refused.
        raise ConfigError(
            f"{where}: a secret was refused by the redactor (each must be at least "
            "prism._native.MIN_SECRET_LENGTH characters)"
        ) from None


def combine(first: SecretRedactor, extra: Iterable[str]) -> SecretRedactor:
    """``first`` plus more exact secrets (a resolved worker credential)."""
    more = [value for value in extra if value]
    if not more:
        return first
    return _Chain(first, create_redactor(more))


class _Chain:
    """Two redactors applied in turn (the host's, then a credential's)."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: SecretRedactor, b: SecretRedactor) -> None:
        self._a = a
        self._b = b

    @property
    def mask(self) -> str:
        return self._a.mask

    def __len__(self) -> int:
        return len(self._a) + len(self._b)

    def contains(self, text: str) -> bool:
        return self._a.contains(text) or self._b.contains(text)

    def redact_text(self, text: str) -> str:
        return self._b.redact_text(self._a.redact_text(text))

    def redact_value(self, value: Any) -> Any:
        return self._b.redact_value(self._a.redact_value(value))
