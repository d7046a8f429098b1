"""A fleet of worker processes running agent sessions on one shared store.

N worker processes (1, 2, 4, 8) run 64 sessions x 50 turns with the mock
provider against PostgreSQL, SQLite and JSONL. Session k belongs to worker
k % N, which runs its 50 turns one after the other and moves on (each run
claims the session's lease through the runtime where the runtime does so). Every process imports and connects first,
then all start together on the parent's signal.

Reported per store and worker count: turns/s over the whole fleet (wall time
from the first worker's start to the last worker's end), p50/p99 latency of
one ``append_many`` (what a turn waits on the store), the median turn time
for turns 1-10 vs 41-50 of each session (per-turn cost against history
length), and throughput relative to one worker.

PostgreSQL runs on a throwaway server (tests/pg_server.py) with the server's
durability defaults (``fsync=on``, ``synchronous_commit=on``), unless
``--pg-synchronous-commit off`` (acknowledge before the WAL flush, like the
SQLite/JSONL defaults that do not fsync per append), or unless ``--pg-dsn``
names an existing database (each run then creates its own schema there).
SQLite and JSONL use their defaults (no fsync per append). ``--stores
memory`` adds a baseline where every worker has its own in-memory store
(nothing shared, no I/O): the harness and mock-provider cost alone.

    python -m benches.fleet [--workers 1,2,4,8] [--sessions 64] [--turns 50]
                            [--stores postgres,sqlite,jsonl] [--json out.json]
                            [--pg-synchronous-commit on|off] [--pg-dsn DSN]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]


# --- worker process -------------------------------------------------------------------


class TimedStore:
    """Delegates to a store, timing every ``append_many`` (``append`` goes
    through it in every shipped store)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.append_s: list[float] = []

    async def append(self, entry: Any) -> None:
        await self.append_many([entry])

    async def append_many(self, entries: Any) -> None:
        started = time.perf_counter()
        await self.inner.append_many(entries)
        self.append_s.append(time.perf_counter() - started)

    async def list(self, session_id: str) -> Any:
        return await self.inner.list(session_id)

    async def get(self, entry_id: str) -> Any:
        return await self.inner.get(entry_id)

    async def list_sessions(self) -> Any:
        return await self.inner.list_sessions()

    async def claim(self, session_id: str) -> Any:
        return await self.inner.claim(session_id)


def open_store(kind: str, target: str) -> Any:
    if kind == "memory":
        # Baseline only: each worker has its own store, nothing is shared.
        from prism.stores import create_memory_session_store

        return create_memory_session_store()
    if kind == "postgres":
        from prism.stores.postgres import create_postgres_session_store

        return create_postgres_session_store(target, min_size=1, max_size=2)
    if kind == "sqlite":
        from prism.stores import create_sqlite_session_store

        return create_sqlite_session_store(target)
    from prism.stores import create_jsonl_session_store

    return create_jsonl_session_store(target)


async def worker_main(config: dict[str, Any]) -> None:
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    def reply(request: Any) -> list[Any]:
        return [provider_text_delta("ok, noted."), provider_done()]

    provider = create_mock_provider(reply)
    inner = open_store(config["kind"], config["target"])
    store = TimedStore(inner)
    mine = [k for k in range(config["sessions"]) if k % config["workers"] == config["index"]]
    await store.list_sessions()  # connect / open the file before the clock starts
    print("ready", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    first: list[float] = []
    last: list[float] = []
    started = time.time()
    for k in mine:
        session_id = f"fleet-{k}"
        # An agent per session, as a worker serving many sessions would hold
        # only the ones it runs: finished sessions are freed, so a worker with
        # 64 sessions does not carry 63 dead branches (and the garbage
        # collector's cost of them) into the last one.
        agent = create_agent(model={"provider": "mock", "model": "fleet"}, provider=provider)
        session = agent.create_session(session_id, store=store)  # type: ignore[arg-type]
        for turn in range(config["turns"]):
            t0 = time.perf_counter()
            await session.run(f"turn {turn}: note this down.")
            took = time.perf_counter() - t0
            provider.requests.clear()  # test bookkeeping, not harness work
            if turn < 10:
                first.append(took)
            if turn >= config["turns"] - 10:
                last.append(took)
    ended = time.time()
    if hasattr(inner, "aclose"):
        await inner.aclose()
    result = {
        "turns": len(mine) * config["turns"],
        "start": started,
        "end": ended,
        "append_s": store.append_s,
        "first_s": first,
        "last_s": last,
    }
    print("result " + json.dumps(result), flush=True)


# --- parent ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_fleet(kind: str, target: str, workers: int, sessions: int, turns: int) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), str(ROOT), env.get("PYTHONPATH", "")]
    )
    procs = []
    for index in range(workers):
        config = {
            "kind": kind,
            "target": target,
            "workers": workers,
            "index": index,
            "sessions": sessions,
            "turns": turns,
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "benches.fleet", "--worker", json.dumps(config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=env,
            )
        )
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"a {kind} worker failed to start: {line!r}")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"a {kind} worker failed ({proc.returncode})")
        results.append(json.loads(out.strip().split("result ", 1)[1]))
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    appends = [x for r in results for x in r["append_s"]]
    first = [x for r in results for x in r["first_s"]]
    last = [x for r in results for x in r["last_s"]]
    return {
        "store": kind,
        "workers": workers,
        "turns": sum(r["turns"] for r in results),
        "wall_s": wall,
        "turns_per_s": sum(r["turns"] for r in results) / wall,
        "append_p50_ms": percentile(appends, 0.50) * 1000,
        "append_p99_ms": percentile(appends, 0.99) * 1000,
        "turn_first10_ms": statistics.median(first) * 1000,
        "turn_last10_ms": statistics.median(last) * 1000,
    }


def fresh_target(kind: str, scratch: Path, run: int, pg: Any) -> str:
    if kind == "postgres":
        return str(pg.dsn(schema=pg.create_schema()))
    if kind == "memory":
        return ""
    suffix = "db" if kind == "sqlite" else "jsonl"
    return str(scratch / f"{kind}-{run}.{suffix}")


class ExistingDatabase:
    """--pg-dsn: each run gets its own schema in that database."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._count = 0

    def create_schema(self) -> str:
        import psycopg

        self._count += 1
        name = f"prism_fleet_{os.getpid()}_{self._count}"
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}".encode())
        return name

    def dsn(self, schema: str) -> str:
        return f"{self._dsn} options='-c search_path={schema}'"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--stores", default="postgres,sqlite,jsonl")
    parser.add_argument("--pg-dsn", help="use this database instead of a throwaway server")
    parser.add_argument(
        "--pg-synchronous-commit",
        choices=["on", "off"],
        default="on",
        help="throwaway server only: 'off' acknowledges a commit before its WAL "
        "is flushed (the durability class of the SQLite/JSONL defaults)",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.worker:
        anyio.run(worker_main, json.loads(args.worker))
        return
    counts = [int(x) for x in args.workers.split(",")]
    kinds = args.stores.split(",")
    rows: list[dict[str, Any]] = []
    server = None
    pg: Any = None
    if "postgres" in kinds:
        if args.pg_dsn:
            pg = ExistingDatabase(args.pg_dsn)
        else:
            from tests.pg_server import PgServer

            # The server's own durability defaults: every commit is flushed.
            server = PgServer(
                settings={
                    "fsync": "on",
                    "full_page_writes": "on",
                    "synchronous_commit": args.pg_synchronous_commit,
                }
            )
            server.init()
            server.start()
            pg = server
    try:
        with tempfile.TemporaryDirectory(prefix="prism-fleet-") as scratch:
            run = 0
            for kind in kinds:
                base = None
                for n in counts:
                    run += 1
                    target = fresh_target(kind, Path(scratch), run, pg)
                    if server is not None:
                        # Flush the server's dirty pages now, so a checkpoint
                        # triggered by the previous run's writes does not
                        # compete for the disk with this run.
                        server.sql("CHECKPOINT")
                    row = run_fleet(kind, target, n, args.sessions, args.turns)
                    base = base or row["turns_per_s"]
                    row["scaling"] = row["turns_per_s"] / base
                    rows.append(row)
                    print(
                        f"{kind:8} workers={n}  {row['turns_per_s']:7.1f} turns/s  "
                        f"x{row['scaling']:.2f}  append p50 {row['append_p50_ms']:.2f} ms "
                        f"p99 {row['append_p99_ms']:.2f} ms  turn 1-10 "
                        f"{row['turn_first10_ms']:.2f} ms / 41-50 {row['turn_last10_ms']:.2f} ms",
                        flush=True,
                    )
    finally:
        if server is not None:
            server.cleanup()
    print()
    print(
        "| store | workers | turns/s | vs 1 worker | append p50 ms | append p99 ms "
        "| turn 1-10 ms | turn 41-50 ms |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['store']} | {r['workers']} | {r['turns_per_s']:.0f} | {r['scaling']:.2f}x "
            f"| {r['append_p50_ms']:.2f} | {r['append_p99_ms']:.2f} "
            f"| {r['turn_first10_ms']:.2f} | {r['turn_last10_ms']:.2f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
