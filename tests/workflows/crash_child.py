"""Child process of the workflow crash test (forked by the test, or run as
a script): runs the scenario workflow on
a JSONL, an SQLite and a PostgreSQL store at once, in lock step, and
SIGKILLs itself right after the Nth write of each (every write is a step
boundary of the workflow or of its agent run). Deterministic: a hook at
that exact point, no timers. ``N`` = 0 runs to the end.

    crash_child.py DIR PG_DSN N
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio
from crash_scenario import Order, build

from prism.stores.jsonl import JsonlSessionStore
from prism.stores.postgres import PostgresSessionStore, create_postgres_session_store
from prism.stores.sqlite import SqliteSessionStore
from prism.workflows import run_workflow


def main(directory: Path, dsn: str, number: int) -> None:
    anyio.run(run, directory, dsn, number)


async def run(directory: Path, dsn: str, number: int) -> None:
    arrived = 0
    never = anyio.Event()

    async def boundary(writes: int) -> None:
        nonlocal arrived
        if writes != number:
            return
        arrived += 1
        if arrived == 3:  # every store is at its Nth write
            os.kill(os.getpid(), signal.SIGKILL)
        await never.wait()

    def counting(base: Any) -> Any:
        class Counting(base):  # type: ignore[misc,valid-type]
            writes = 0

            async def append_many(self, entries: Any) -> None:
                await super().append_many(entries)
                self.writes += 1
                await boundary(self.writes)

        return Counting

    jsonl = counting(JsonlSessionStore)(str(directory / "s.jsonl"))
    sqlite = counting(SqliteSessionStore)(str(directory / "s.sqlite"))
    postgres = create_postgres_session_store(dsn)
    postgres.__class__ = counting(PostgresSessionStore)
    results: dict[str, Any] = {}

    async def one(kind: str, store: Any) -> None:
        flow = build(store, directory / f"{kind}.counts", f"order-{number}")
        results[kind] = await run_workflow(
            flow, Order(id="A-17", cents=1250), store=store, workflow_id=f"order-{number}"
        )

    async with postgres, anyio.create_task_group() as group:
        for kind, store in (("jsonl", jsonl), ("sqlite", sqlite), ("postgres", postgres)):
            group.start_soon(one, kind, store)
    (directory / "writes").write_text(f"{jsonl.writes} {sqlite.writes} {postgres.writes}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
