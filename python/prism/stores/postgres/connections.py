"""Connection health without a round trip."""

from __future__ import annotations

import select
import selectors
from typing import Any

import psycopg
from psycopg import AsyncConnection


def socket_readable(fd: int) -> bool:
    """Whether ``fd`` has something to read (data, EOF or an error), without
    blocking. ``poll`` and ``selectors`` take any descriptor number, unlike
    ``select.select``, which fails for descriptors past FD_SETSIZE (1,024):
    a process with many open files would otherwise see every connection as
    broken."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    with selectors.DefaultSelector() as selector:  # pragma: no cover - platforms without poll
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(0))


def drain_idle_connection(conn: AsyncConnection[Any]) -> None:
    """Read whatever an idle connection has received; raise
    ``OperationalError`` if the server closed it (it sends the reason, then
    EOF). Only for a connection no query is running on: reading here would
    take a running query's reply away from it."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("connection closed")
    fd = conn.pgconn.socket
    for _ in range(8):
        if not socket_readable(fd):
            return
        conn.pgconn.consume_input()  # raises OperationalError at EOF
        conn.pgconn.is_busy()  # parses what arrived: notices reach their handlers
    raise psycopg.OperationalError("connection keeps receiving unexpected data")


async def check_idle_connection(conn: AsyncConnection[Any]) -> None:
    """Pool check without a round trip: an idle connection has nothing to
    read unless the server closed it or sent a notice, so a closed connection
    is dropped by the pool and another handed out. A server that vanished
    without closing its sockets is not detected here; that call fails
    instead."""
    drain_idle_connection(conn)
