"""Count PostgreSQL round trips from libpq's own protocol trace: each
client ``Sync`` (extended protocol) or ``Query`` (simple protocol) message
is one wait for the server's ReadyForQuery."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from psycopg import AsyncConnection

_T = TypeVar("_T")


def round_trips(trace: Path) -> int:
    sent = [line.split("\t") for line in trace.read_text().splitlines()]
    return sum(1 for fields in sent if fields[0] == "F" and fields[2] in ("Sync", "Query"))


async def count_round_trips(
    conn: AsyncConnection[Any], trace: Path, call: Awaitable[_T]
) -> tuple[_T, int]:
    """Run ``call`` with ``conn`` traced; its result and the round trips it took."""
    with trace.open("w") as sink:
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(1)  # no timestamps: direction, length, type first
        try:
            result = await call
        finally:
            conn.pgconn.untrace()
    return result, round_trips(trace)
