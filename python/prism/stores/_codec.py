"""Encoding and validating entries for the persistent stores.

Every persistent store writes an entry as one compact JSON line (the same
bytes the JSONL file holds and the SQLite ``json`` column stores), and checks
the per-kind shape with the native session-entry parser before anything is
written. Reusing the reader's parser means a store can never accept an entry
that it would later quarantine on read, and there is exactly one
implementation of the shape rules (the native one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from prism.contracts import SessionEntry, SessionEntryParseError
from prism.errors import DuplicateEntryError, StoreError
from prism.stores.base import validate_entry_for_append

ParseFn = Callable[..., tuple[list[dict[str, Any]], list[dict[str, Any]]]]


def native_parser() -> ParseFn:
    """The native JSONL parser, imported on first use so ``import prism``
    never depends on it."""
    from prism import _native

    parse = getattr(_native, "parse_session_entries", None)
    if parse is None:
        raise StoreError(
            "prism._native.parse_session_entries is missing; rebuild the native core (make install)"
        )
    return cast(ParseFn, parse)


def parse_lines(
    data: bytes, first_line: int = 1
) -> tuple[list[SessionEntry], list[SessionEntryParseError]]:
    try:
        entries, errors = native_parser()(data, first_line=first_line)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # The parser quarantines bad content line by line; reaching here
        # means it could not run at all. Still a store error, not a crash.
        raise StoreError(
            f"cannot parse session data: {type(exc).__name__}: {_short(exc)}"
        ) from None
    return cast(list[SessionEntry], entries), cast(list[SessionEntryParseError], errors)


def encode_line(entry: object) -> bytes:
    """One entry as compact UTF-8 JSON without the newline."""
    checked = validate_entry_for_append(entry)
    try:
        text = json.dumps(checked, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except RecursionError:
        raise StoreError(f"session entry {checked['id']!r} is nested too deeply to store") from None
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise StoreError(
            f"session entry {checked['id']!r} is not JSON-serializable: {type(exc).__name__}"
            f": {_short(exc)}"
        ) from None


def encode_batch(entries: Sequence[object]) -> tuple[list[bytes], list[SessionEntry]]:
    """Validate a batch and return its encoded lines plus fresh parsed copies.

    The copies come from parsing the encoded bytes, so the store keeps data
    a caller cannot mutate afterwards, identical to what a reader will see.
    Raises StoreError / DuplicateEntryError before anything is written.
    """
    if isinstance(entries, (str, bytes, dict)) or not isinstance(entries, Iterable):
        raise StoreError("append_many expects a sequence of session entries")
    entries = list(entries)  # a generator is read once
    lines = [encode_line(entry) for entry in entries]
    seen: set[str] = set()
    for entry in entries:
        entry_id = cast(SessionEntry, entry)["id"]
        if entry_id in seen:
            raise DuplicateEntryError(f"duplicate session entry id {entry_id!r} inside the batch")
        seen.add(entry_id)
    parsed, errors = parse_lines(b"\n".join(lines) + b"\n")
    if errors:
        bad = errors[0]
        entry_id = cast(SessionEntry, entries[bad["line"] - 1])["id"]
        raise StoreError(f"session entry {entry_id!r} has an invalid shape: {bad['reason']}")
    return lines, parsed


def _short(exc: Exception, limit: int = 200) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."
