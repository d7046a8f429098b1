"""Redaction for text that arrives in pieces (streamed model deltas).

Redacting each delta on its own misses a secret the provider split across
two deltas (``sk-live-12`` + ``34567890``): neither piece holds it. A
:class:`StreamRedactor` sits on one stream (one content block) and emits only
text that can no longer become part of a secret.

The rule, for the exact-secret redactor Prism uses (it masks the secrets and
their JSON/repr spellings, and no patterns), is the native
``Redactor.settled_length``:

* hold back the longest suffix of the unsent text that is a proper prefix of
  a secret (the next delta may complete it);
* never cut inside a secret already complete in the unsent text;
* never cut between the halves of a surrogate pair: a trailing high
  surrogate waits for the next delta;
* what is sent is mended (a lone surrogate becomes U+FFFD, as in the
  finished message) and redacted; :meth:`StreamRedactor.flush` sends the rest
  at block end.

No cut ever falls inside an occurrence of a secret, so (with leftmost-longest
matching) the redacted pieces join to the redaction of the whole text: the
joined deltas equal the redacted, mended finished block. A redactor without
``settled_length`` (a host's own) holds back the trailing run of
non-whitespace instead, which is sound for secrets without whitespace.
"""

from __future__ import annotations

from typing import Final

from prism._text import mend_surrogates
from prism.security.redaction import SecretRedactor, settled_length

__all__ = ["StreamRedactor"]

_HIGH_FIRST: Final = "\ud800"
_HIGH_LAST: Final = "\udbff"


class StreamRedactor:
    """Redacts one stream of text deltas with ``redactor``; see the module
    docstring for what is held back. With no secrets only surrogate pairs
    are held together."""

    __slots__ = ("_active", "_held", "_redactor", "_settled")

    def __init__(self, redactor: SecretRedactor) -> None:
        self._redactor = redactor
        self._active = len(redactor) > 0
        native = getattr(redactor, "settled_length", None)
        self._settled = native or (lambda text: settled_length(redactor, text))
        self._held = ""

    @property
    def held(self) -> str:
        """The text waiting for the next delta (not yet sent)."""
        return self._held

    def feed(self, text: str) -> str:
        """The part of the held text plus ``text`` that is safe to send now,
        mended and redacted."""
        if self._held:
            text = self._held + text
        if not self._active and text.isascii():
            self._held = ""
            return text
        cut = self._settled(text) if self._active else len(text)
        if cut and _HIGH_FIRST <= text[cut - 1] <= _HIGH_LAST:
            cut -= 1
        self._held = text[cut:]
        return self._send(text[:cut])

    def flush(self) -> str:
        """Everything still held, mended and redacted: the block ended."""
        held, self._held = self._held, ""
        return self._send(held)

    def _send(self, text: str) -> str:
        if not text:
            return ""
        text = mend_surrogates(text)
        return self._redactor.redact_text(text) if self._active else text
