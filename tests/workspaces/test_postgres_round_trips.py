"""Lease acquire and renew on PostgreSQL take one round trip each (the
target is at most two), counted from libpq's own protocol trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.workspaces.conftest import SCOPE
from tests.workspaces.pgtrace import count_round_trips

from prism.workspaces import Lease
from prism.workspaces.postgres import PostgresFencedStore

pytestmark = pytest.mark.anyio


async def test_acquire_renew_save_release_are_one_round_trip_each(
    pg_dsn: str, tmp_path: Path
) -> None:
    store = PostgresFencedStore(pg_dsn)
    conn = await store._connection()
    trace = tmp_path / "trace.txt"
    lease, trips = await count_round_trips(
        conn, trace, store.try_acquire("ws/1", scope=SCOPE, owner="a")
    )
    assert isinstance(lease, Lease) and trips == 1
    renewed, trips = await count_round_trips(conn, trace, store.renew(lease, ttl=60))
    assert isinstance(renewed, Lease) and trips == 1
    _, trips = await count_round_trips(
        conn, trace, store.save("ws/1", {"n": 1}, version=0, lease=renewed)
    )
    assert trips == 1
    _, trips = await count_round_trips(conn, trace, store.release(renewed))
    assert trips == 1
    # A busy key costs a second round trip (to tell "busy" from "not yours").
    await store.try_acquire("ws/2", scope=SCOPE, owner="a")
    busy, trips = await count_round_trips(
        conn, trace, store.try_acquire("ws/2", scope=SCOPE, owner="b")
    )
    assert busy is None and trips == 2
    await store.close()
