"""Text a model sent that UTF-8 cannot hold.

JSON lets a server write half a UTF-16 surrogate pair (``"\\ud800"``), and
Python decodes it into a ``str`` that no store, log or request can encode.
Model output is not the host's input to refuse: like a UTF-8 decoder meeting
a broken byte sequence, each lone half becomes U+FFFD and the run goes on."""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["SURROGATE", "mend_surrogates", "mend_value"]

SURROGATE: Final = re.compile("[\ud800-\udfff]")


def mend_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a valid pair
    written as two code points is joined). Plain text passes untouched."""
    if text.isascii() or SURROGATE.search(text) is None:
        return text
    # UTF-16 with surrogatepass pairs every valid high/low couple; the
    # decoder's "replace" turns each lone half into U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def mend_value(value: Any) -> Any:
    """``value`` (JSON data) with :func:`mend_surrogates` applied to every
    string, keys included; the same object when nothing needed mending."""
    if isinstance(value, str):
        return mend_surrogates(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = mend_surrogates(key) if isinstance(key, str) else key
            new_item = mend_value(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list):
        items = [mend_value(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value
