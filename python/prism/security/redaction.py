"""Exact-secret redaction at Prism's boundaries (events, entries, errors, logs).

The matching itself is the native ``Redactor`` (Aho-Corasick, built once per
secret set); this module picks it or a no-op, and offers the small helpers the
provider adapters and the runtime call on error infos and events. There is one
redaction path: every API takes a redactor object, built once.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from typing import Final, TypeVar

from prism.errors import ConfigError, error_info, redact_error_info
from prism.security.limits import describe_path, too_deep_path
from prism.security.secret_redactor import (
    DEFAULT_MASK,
    NOOP_REDACTOR,
    NoopRedactor,
    SecretRedactor,
    require_redactor,
)

_T = TypeVar("_T")

__all__ = [
    "DEFAULT_MASK",
    "ID_KEYS",
    "NOOP_REDACTOR",
    "NoopRedactor",
    "SecretRedactor",
    "create_redactor",
    "error_info",
    "escaped_forms",
    "normalize_secrets",
    "redact_error_info",
    "redact_event",
    "redact_keeping_ids",
    "redact_then_clip",
    "redactable_credentials",
    "require_redactor",
    "settled_length",
    "with_secrets",
]


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


def escaped_forms(secret: str) -> tuple[str, ...]:
    """The ways ``secret`` is spelled once it has been through ``json.dumps``
    or ``repr()`` (``unknown tool {name!r}``, ``KeyError``, a logged dict).

    Only forms that differ from ``secret`` are returned. ``repr`` escapes a
    single quote only when the whole string holds both quote kinds, so both
    spellings are listed; JSON is listed with and without ``ensure_ascii``."""
    forms: dict[str, None] = {}
    forms[json.dumps(secret)[1:-1]] = None
    forms[json.dumps(secret, ensure_ascii=False)[1:-1]] = None
    # Leading '" forces single-quote delimiters and an escaped single quote.
    body = repr("'\"" + secret)[4:-1]
    forms[body] = None
    forms[body.replace("\\'", "'")] = None
    forms.pop(secret, None)
    return tuple(forms)


def _short(secret: str) -> bool:
    from prism._native import MIN_SECRET_LENGTH

    return len(secret) < MIN_SECRET_LENGTH


_warned_short_credentials: set[str] = set()


def redactable_credentials(values: Iterable[str | None], *, origin: str) -> tuple[str, ...]:
    """Credentials (API keys, resolved tokens) that can be redacted.

    A key shorter than ``MIN_SECRET_LENGTH`` (local servers often take ``x``)
    is accepted but not redacted: masking a one-letter string would shred
    ordinary text. A warning says so once per ``origin``; it never shows the key."""
    out: list[str] = []
    for value in normalize_secrets(values):
        if _short(value):
            if origin not in _warned_short_credentials:
                _warned_short_credentials.add(origin)
                warnings.warn(
                    f"{origin}: the API key is shorter than 4 characters, so it is used "
                    "but not redacted from errors and events (fine for a local server's "
                    "placeholder key, not for a real one)",
                    RuntimeWarning,
                    stacklevel=3,
                )
            continue
        out.append(value)
    return tuple(out)


def create_redactor(
    secrets: Iterable[str | None] | None = (), mask: str = DEFAULT_MASK
) -> SecretRedactor:
    """Return the native ``Redactor`` for ``secrets``, or a ``NoopRedactor`` if none.

    Build it once (the agent does, from ``secrets=``) and pass the object
    around: every Prism API that redacts takes a redactor, never a list.
    Empty strings and ``None`` are ignored (an unset optional credential is not
    a secret); duplicates are folded. Each secret's JSON- and repr-escaped
    spellings are masked too (see :func:`escaped_forms`). A secret shorter than
    ``prism._native.MIN_SECRET_LENGTH`` raises ConfigError naming its position.
    """
    if not isinstance(mask, str):
        raise TypeError(f"mask must be a string, got {type(mask).__name__}")
    values = normalize_secrets(secrets)
    if not values:
        return NoopRedactor(mask)
    from prism._native import Redactor

    for index, value in enumerate(values):
        if _short(value):
            # Masking it would shred ordinary text, and skipping it would leak it.
            raise ConfigError(
                f"cannot redact these secrets: secret #{index} is shorter than "
                "MIN_SECRET_LENGTH (4 characters); API keys that short are accepted "
                "by the providers but cannot be listed in secrets="
            )
    expanded = list(values)
    for value in values:
        expanded.extend(escaped_forms(value))
    try:
        redactor: SecretRedactor = Redactor(expanded, mask)
    except ValueError as exc:
        raise ConfigError(f"cannot redact these secrets: {exc}") from None
    return redactor


def with_secrets(redactor: SecretRedactor, extra: Iterable[str]) -> SecretRedactor:
    """``redactor`` plus more exact secrets learned later (a credential a
    worker or a compaction model resolved at call time), as one redactor:
    ``redactor`` itself when ``extra`` adds nothing."""
    require_redactor(redactor, owner="with_secrets")
    more = normalize_secrets(extra)
    if not more:
        return redactor
    return _Chain(redactor, create_redactor(more))


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

    def redact_value(self, value: _T) -> _T:
        return self._b.redact_value(self._a.redact_value(value))

    def settled_length(self, text: str) -> int:
        # Settled for both: neither redactor can still change the prefix.
        return min(settled_length(self._a, text), settled_length(self._b, text))


def settled_length(redactor: SecretRedactor, text: str) -> int:
    """How many leading characters of ``text`` (a stream's unsent tail)
    ``redactor`` can redact now, with no later text able to change them.

    Prism's redactors answer exactly (``settled_length``: the longest suffix
    that could still grow into a secret is held back, and no complete secret
    is cut). A host redactor without that method gets the cautious rule: the
    trailing run of non-whitespace is held back (secrets hold no whitespace)."""
    settled = getattr(redactor, "settled_length", None)
    if settled is not None:
        return int(settled(text))
    return max(text.rfind(c) for c in " \n\t\r") + 1


def redact_then_clip(text: str, redactor: SecretRedactor, limit: int, marker: str = "…") -> str:
    """``text`` redacted, *then* cut to ``limit`` characters (plus ``marker``).

    The order is the point: clipping first can cut a secret in half, and the
    redactor, which matches whole secrets only, would then pass its prefix.
    A clip may still cut the mask itself, which reveals nothing."""
    redacted = redactor.redact_text(text)
    return redacted if len(redacted) <= limit else redacted[:limit] + marker


ID_KEYS: Final[frozenset[str]] = frozenset({"id", "parentId", "sessionId", "toolCallId", "runId"})
"""Keys whose string values are structure, not content: never redacted."""


def redact_keeping_ids(value: _T, redactor: SecretRedactor) -> _T:
    """``redactor.redact_value(value)``, except that strings under
    :data:`ID_KEYS` keep their original value at any depth.

    Ids link a conversation together (``parentId`` -> ``id``, a tool result's
    ``toolCallId`` -> its call): masking a secret that happens to occur in
    one would orphan every entry after it. User-chosen ids that hold a secret
    are refused where they are created (``create_session``), so what is kept
    here is generated ids and provider call ids.

    A value nested deeper than the native walk allows raises
    ``NestingTooDeepError`` with a short, redacted path."""
    try:
        out = redactor.redact_value(value)
    except ValueError:
        from prism.errors import NestingTooDeepError

        path = too_deep_path(value, 90)
        if path is None:
            raise
        raise NestingTooDeepError(
            f"value nested deeper than the redactor allows at {describe_path(path, redactor)}"
        ) from None
    if out is value:
        return out
    return _restore_ids(value, out)  # type: ignore[return-value]


def _restore_ids(original: object, redacted: object) -> object:
    # Only containers the redactor created anew (``is not`` the original) are
    # edited; untouched subtrees are shared with the original and left alone.
    if original is redacted:
        return redacted
    if isinstance(original, dict) and isinstance(redacted, dict):
        for key, value in original.items():
            if key not in redacted:
                continue  # the key itself held a secret
            if key in ID_KEYS and isinstance(value, str):
                redacted[key] = value
            else:
                redacted[key] = _restore_ids(value, redacted[key])
        return redacted
    if isinstance(original, list) and isinstance(redacted, list):
        if len(original) == len(redacted):
            for index, (old, new) in enumerate(zip(original, redacted, strict=True)):
                if old is not new:
                    redacted[index] = _restore_ids(old, new)
        return redacted
    if isinstance(original, tuple) and isinstance(redacted, tuple):
        if len(original) == len(redacted):
            return tuple(_restore_ids(o, r) for o, r in zip(original, redacted, strict=True))
    return redacted


def redact_event(event: _T, redactor: SecretRedactor) -> _T:
    """A redacted copy of a provider/agent event (any JSON-shaped dict).

    Events are never mutated in place: history and subscribers may hold them.
    """
    if redactor is None:
        raise TypeError("redact_event needs a redactor (NoopRedactor() when there are no secrets)")
    if len(redactor) == 0:
        return event
    return redactor.redact_value(event)
