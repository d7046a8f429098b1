"""Reading SQLite rows back into entries, quarantining bad rows.

The SQLite store writes each entry as its compact JSON text, one row per
entry, so a row is exactly one JSONL line. A row edited by hand (or by a
foreign tool) can hold anything: a BLOB, a number, NULL, invalid UTF-8, a
raw newline that would split it into two "lines", a BOM, or JSON whose id
or sessionId disagrees with the row's columns. Such a row is quarantined
like a bad JSONL line (reported with its ``seq`` as the line number) and the
rest of the session still loads.

Rows are selected as ``seq, id, session_id, typeof(entry), CAST(entry AS
BLOB)``, so the entry's bytes reach the native parser without a UTF-8
round trip through Python and invalid UTF-8 cannot make the query fail.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from prism.contracts import SessionEntry, SessionEntryParseError
from prism.stores._codec import parse_lines

_log = logging.getLogger("prism.stores")

ROW_COLUMNS = "seq, id, session_id, typeof(entry), CAST(entry AS BLOB)"
_BOM = b"\xef\xbb\xbf"
_RAW_EXCERPT = 256  # characters of a bad row kept in its quarantine record

Row = tuple[int, Any, Any, str, Any]


def decode_text(data: bytes) -> str | None:
    """``text_factory`` for the store's connection: a TEXT value that is not
    valid UTF-8 reads as None instead of failing the whole query."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def decode_rows(
    rows: Sequence[Row],
) -> tuple[list[tuple[int, SessionEntry]], list[SessionEntryParseError]]:
    """``(seq, entry)`` for every good row, in row order, and one quarantine
    record per bad row. Never raises for row content."""
    errors: list[SessionEntryParseError] = []
    candidates: list[tuple[int, Any, Any, bytes]] = []
    for seq, row_id, row_session, kind, raw in rows:
        problem = _row_problem(kind, raw)
        if problem is None and (row_id is None or row_session is None):
            problem = "row's id or session_id column is not valid UTF-8 text"
        if problem is not None:
            errors.append(_quarantine(seq, problem, raw))
        else:
            candidates.append((seq, row_id, row_session, raw))
    good: list[tuple[int, SessionEntry]] = []
    if not candidates:
        return good, errors
    # One native call for the whole result: every candidate is exactly one
    # line (no newline, not blank), so the parser's line N is candidate N.
    entries, parse_errors = parse_lines(b"\n".join(c[3] for c in candidates))
    if len(entries) + len(parse_errors) != len(candidates):  # pragma: no cover - defensive
        return _decode_one_by_one(candidates, errors)
    bad_lines = {e["line"]: e for e in parse_errors}
    parsed = iter(entries)
    for line, (seq, row_id, row_session, raw) in enumerate(candidates, start=1):
        failure = bad_lines.get(line)
        if failure is not None:
            errors.append(_quarantine(seq, failure["reason"], raw))
            continue
        entry = next(parsed)
        mismatch = _column_mismatch(entry, row_id, row_session)
        if mismatch is not None:
            errors.append(_quarantine(seq, mismatch, raw))
        else:
            good.append((seq, entry))
    return good, errors


def _decode_one_by_one(
    candidates: list[tuple[int, Any, Any, bytes]], errors: list[SessionEntryParseError]
) -> tuple[list[tuple[int, SessionEntry]], list[SessionEntryParseError]]:
    good: list[tuple[int, SessionEntry]] = []
    for seq, row_id, row_session, raw in candidates:
        entries, parse_errors = parse_lines(raw)
        if len(entries) != 1 or parse_errors:
            reason = parse_errors[0]["reason"] if parse_errors else "row is not one entry"
            errors.append(_quarantine(seq, reason, raw))
            continue
        mismatch = _column_mismatch(entries[0], row_id, row_session)
        if mismatch is not None:
            errors.append(_quarantine(seq, mismatch, raw))
        else:
            good.append((seq, entries[0]))
    return good, errors


def _row_problem(kind: str, raw: Any) -> str | None:
    if kind != "text" or not isinstance(raw, bytes):
        return f"row holds {kind} instead of JSON text"
    if b"\n" in raw or b"\r" in raw:
        return "row holds a raw line break (the store writes one JSON line per row)"
    if not raw.strip():
        return "row is empty"
    if raw.startswith(_BOM):
        return "row starts with a byte order mark"
    return None


def _column_mismatch(entry: SessionEntry, row_id: str, row_session: str) -> str | None:
    if entry["id"] != row_id:
        return "entry id does not match the row's id column"
    if entry["sessionId"] != row_session:
        return "entry sessionId does not match the row's session_id column"
    return None


def _quarantine(seq: int, reason: str, raw: Any) -> SessionEntryParseError:
    # The row number and reason only: the raw text may hold anything.
    _log.warning("row %d quarantined: %s", seq, reason)
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "replace")
    elif raw is None:
        text = ""
    else:
        text = str(raw)
    if len(text) > _RAW_EXCERPT:
        text = text[:_RAW_EXCERPT] + "..."
    return {"line": seq, "reason": reason, "raw": text}
