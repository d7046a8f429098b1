"""Subprocess body for the fleet test: one worker on a workspace checkpoint.

usage: fleet_worker.py STORE KEY NAME
Reads one command a line from stdin and answers one line on stdout, so the
parent decides the interleaving and nothing waits on a clock:

    acquire      -> "acquired TOKEN" | "busy"
    skew S       -> "ok" (this worker's clock runs S seconds ahead: SQLite only)
    write TEXT   -> "saved VERSION" | "fenced CODE" (load, append TEXT, save)
    quit
"""

from __future__ import annotations

import sys
import time

import anyio

from prism.workspaces import Lease, OwnershipScope, WorkspaceFenceError, create_fenced_store
from prism.workspaces.backends import is_postgres_dsn

SCOPE = OwnershipScope(tenant="fleet")


async def main(store_path: str, key: str, name: str) -> None:
    skew = [0.0]
    clock = None if is_postgres_dsn(store_path) else (lambda: time.time() + skew[0])
    store = create_fenced_store(store_path, clock=clock)
    lease: Lease | None = None
    version = 0
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "acquire":
            lease = await store.try_acquire(key, scope=SCOPE, owner=name, ttl=30)
            print("busy" if lease is None else f"acquired {lease.token}", flush=True)
            if lease is not None:
                found = await store.load(key, scope=SCOPE)
                version = 0 if found is None else found.version
        elif command == "skew":
            skew[0] = float(arg)
            print("ok", flush=True)
        elif command == "write":
            assert lease is not None
            found = await store.load(key, scope=SCOPE)
            log = [] if found is None else list(found.data["log"])
            try:
                saved = await store.save(
                    key, {"log": [*log, arg], "by": name}, version=version, lease=lease
                )
            except WorkspaceFenceError as error:
                print(f"fenced {error.code}", flush=True)
                continue
            version = saved.version
            print(f"saved {saved.version}", flush=True)
        elif command == "quit":
            break
    await store.close()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
