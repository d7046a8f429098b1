"""Lease acquire and renew on PostgreSQL take one round trip each (the
target is at most two), counted from libpq's own protocol trace: every
client Sync (extended protocol) or Query (simple protocol) message is one
wait for the server."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.workspaces.conftest import SCOPE

from prism.workspaces import Lease
from prism.workspaces.postgres import PostgresFencedStore

pytestmark = pytest.mark.anyio


def round_trips(trace: Path) -> int:
    sent = [line.split("\t") for line in trace.read_text().splitlines()]
    return sum(1 for fields in sent if fields[0] == "F" and fields[2] in ("Sync", "Query"))


class Traced:
    def __init__(self, store: PostgresFencedStore, path: Path) -> None:
        self.store = store
        self.path = path

    async def count(self, call: object) -> tuple[object, int]:
        conn = await self.store._connection()
        with self.path.open("w") as sink:
            conn.pgconn.trace(sink.fileno())
            conn.pgconn.set_trace_flags(1)  # no timestamps: fields are direction, length, type
            try:
                result = await call  # type: ignore[misc]
            finally:
                conn.pgconn.untrace()
        return result, round_trips(self.path)


async def test_acquire_and_renew_are_one_round_trip_each(pg_dsn: str, tmp_path: Path) -> None:
    store = PostgresFencedStore(pg_dsn)
    traced = Traced(store, tmp_path / "trace.txt")
    lease, trips = await traced.count(store.try_acquire("ws/1", scope=SCOPE, owner="a"))
    assert isinstance(lease, Lease) and trips == 1
    renewed, trips = await traced.count(store.renew(lease, ttl=60))
    assert isinstance(renewed, Lease) and trips == 1
    _, trips = await traced.count(store.save("ws/1", {"n": 1}, version=0, lease=renewed))
    assert trips == 1
    _, trips = await traced.count(store.release(renewed))
    assert trips == 1
    # A busy key costs a second round trip (to tell "busy" from "not yours").
    await store.try_acquire("ws/2", scope=SCOPE, owner="a")
    busy, trips = await traced.count(store.try_acquire("ws/2", scope=SCOPE, owner="b"))
    assert busy is None and trips == 2
    await store.close()
