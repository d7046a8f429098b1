"""Fenced leases and checkpoints (issue 29's targets), side by side in one run.

- PostgreSQL: round trips of a lease acquire and a renew (target: at most
  2), counted from libpq's protocol trace, and their latency against a bare
  ``SELECT 1`` on the same connection;
- SQLite: a fenced checkpoint save (lease check + version compare-and-set
  + write, one ``BEGIN IMMEDIATE`` transaction; target: under 1 ms) against
  an unfenced upsert of the same document through the same connection and
  worker-thread hop.

Variants interleave so load on the shared machine hits each alike; medians
and minimums are reported. Starts its own throwaway PostgreSQL
(tests/pg_server.py) and stops it at the end.

    python -m benches.workspace_fencing [--runs 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from tests.pg_server import PgServer
from tests.workspaces.pgtrace import count_round_trips

from prism.workspaces import OwnershipScope
from prism.workspaces.postgres import PostgresFencedStore
from prism.workspaces.sqlite import SqliteFencedStore

_T = TypeVar("_T")
SCOPE = OwnershipScope(tenant="bench")
DOCUMENT = {
    "id": "ws-1",
    "state": "open",
    "legs": [{"repositoryId": "app", "branch": "agent/ws-1", "path": "/w/ws-1/app"}],
}


async def _timed(action: Callable[[], Awaitable[_T]], samples: list[float]) -> _T:
    started = time.perf_counter()
    result = await action()
    samples.append((time.perf_counter() - started) * 1000)
    return result


async def postgres(dsn: str, runs: int, scratch: Path) -> dict[str, object]:
    store = PostgresFencedStore(dsn)
    conn = await store._connection()
    trace = scratch / "trace.txt"
    lease, acquire_trips = await count_round_trips(
        conn, trace, store.try_acquire("ws/rt", scope=SCOPE, owner="bench")
    )
    assert lease is not None
    _, renew_trips = await count_round_trips(conn, trace, store.renew(lease))
    samples: dict[str, list[float]] = {"select 1": [], "acquire": [], "renew": []}
    for i in range(runs):
        await _timed(partial(conn.execute, "SELECT 1"), samples["select 1"])
        # Acquire after a release (the upsert's update path, token + 1).
        first = await store.try_acquire(f"ws/{i}", scope=SCOPE, owner="bench")
        assert first is not None
        await store.release(first)
        again = partial(store.try_acquire, f"ws/{i}", scope=SCOPE, owner="bench")
        held = await _timed(again, samples["acquire"])
        assert held is not None
        await _timed(partial(store.renew, held), samples["renew"])
    await store.close()
    return {"round trips": {"acquire": acquire_trips, "renew": renew_trips}, "ms": samples}


async def sqlite(path: Path, runs: int) -> dict[str, list[float]]:
    store = SqliteFencedStore(path)
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="bench", ttl=300)
    assert lease is not None
    text = json.dumps(DOCUMENT, separators=(",", ":"))

    def unfenced(conn: object) -> None:
        conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO prism_ws_checkpoints (key, scope, version, fence, data) "
            "VALUES ('plain', ?, 1, 0, ?) ON CONFLICT (key) DO UPDATE SET "
            "version = version + 1, data = excluded.data",
            (SCOPE.encode(), text),
        )

    version = 0
    samples: dict[str, list[float]] = {"unfenced upsert": [], "fenced save": []}
    for _ in range(runs):
        await _timed(partial(store._run, unfenced), samples["unfenced upsert"])
        save = partial(store.save, "ws/1", DOCUMENT, version=version, lease=lease)
        version = (await _timed(save, samples["fenced save"])).version
    await store.close()
    return samples


def _row(name: str, values: list[float], base: list[float]) -> str:
    ratio = statistics.median(values) / statistics.median(base)
    return f"| {name} | {min(values):.3f} | {statistics.median(values):.3f} | {ratio:.2f}x |"


async def main(runs: int) -> None:
    server = PgServer(settings={"fsync": "on", "synchronous_commit": "on"})
    server.init()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="prism-fence-") as scratch:
            pg = await postgres(server.dsn(schema=server.create_schema()), runs, Path(scratch))
            lite = await sqlite(Path(scratch) / "fence.db", runs)
    finally:
        server.cleanup()
    print(f"PostgreSQL round trips: {pg['round trips']}")
    ms: dict[str, list[float]] = pg["ms"]  # type: ignore[assignment]
    print("| PostgreSQL | min ms | median ms | vs SELECT 1 |\n| --- | ---: | ---: | ---: |")
    for name in ("select 1", "acquire", "renew"):
        print(_row(name, ms[name], ms["select 1"]))
    print("| SQLite | min ms | median ms | vs unfenced |\n| --- | ---: | ---: | ---: |")
    for name in ("unfenced upsert", "fenced save"):
        print(_row(name, lite[name], lite["unfenced upsert"]))
    p99 = statistics.quantiles(lite["fenced save"], n=100)[98]
    print(f"fenced save p99: {p99:.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    anyio.run(main, parser.parse_args().runs)
