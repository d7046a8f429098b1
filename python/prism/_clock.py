"""The one timestamp format entries carry: UTC, milliseconds, a ``Z`` suffix
(``2026-11-30T14:00:00.000Z``), as the original writes ``createdAt``."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
