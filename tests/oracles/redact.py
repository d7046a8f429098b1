"""Reference redactor: one regex alternation, longest secrets first.

Python's alternation is leftmost-first; ordering the literals longest first
makes it leftmost-longest, the native automaton's match kind.
"""

from __future__ import annotations

import re
from typing import Any

MIN_SECRET_LENGTH = 4


class Redactor:
    def __init__(self, secrets: Any, mask: str = "[REDACTED]") -> None:
        if isinstance(secrets, str):
            raise TypeError("secrets must be an iterable of str, not a single str")
        items = list(secrets)
        for i, s in enumerate(items):
            if not isinstance(s, str):
                raise TypeError(f"secret #{i} must be a str, not {type(s).__name__}")
        for i, s in enumerate(items):
            if not s:
                raise ValueError(f"secret #{i} is empty")
            if len(s) < MIN_SECRET_LENGTH:
                raise ValueError(
                    f"secret #{i} is shorter than MIN_SECRET_LENGTH ({MIN_SECRET_LENGTH} characters)"
                )
        self._secrets = sorted(
            set(items), key=lambda s: (-len(s.encode("utf-8", "surrogatepass")), s)
        )
        self.mask = mask
        self._re = re.compile("|".join(map(re.escape, self._secrets))) if self._secrets else None

    def __len__(self) -> int:
        return len(self._secrets)

    def contains(self, text: str) -> bool:
        return self._re is not None and self._re.search(text) is not None

    def redact_text(self, text: str) -> str:
        if self._re is None:
            return text
        return self._re.sub(lambda _m: self.mask, text)

    def redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.redact_value(v) for v in value)
        return value
