"""Connection health without a round trip."""

from __future__ import annotations

import select
from typing import Any

import psycopg
from psycopg import AsyncConnection


async def check_idle_connection(conn: AsyncConnection[Any]) -> None:
    """Pool check without a round trip: an idle connection has nothing to
    read unless the server closed it (it sends the reason, then EOF) or sent a
    notice. Reading whatever is there raises for a closed connection, so the
    pool drops it and hands out another. A server that vanished without
    closing its sockets is not detected here; that call fails instead."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("connection closed")
    fd = conn.pgconn.socket
    for _ in range(8):
        readable, _w, _x = select.select([fd], [], [], 0)
        if not readable:
            return
        conn.pgconn.consume_input()  # raises OperationalError at EOF
    raise psycopg.OperationalError("connection keeps receiving unexpected data")
