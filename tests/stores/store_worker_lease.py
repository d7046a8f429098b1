"""Subprocess body for the lease tests: hold one session's lease.

usage: store_worker_lease.py KIND PATH SESSION
Prints ``held`` once the lease is held (or ``busy`` if someone else holds
it), then keeps it until stdin reaches EOF, releases it and prints
``released``. The parent decides when the lease ends, so no test waits on a
clock.
"""

from __future__ import annotations

import sys

import anyio

from prism.errors import SessionBusyError
from prism.stores import create_jsonl_session_store, create_sqlite_session_store


async def main(kind: str, path: str, session_id: str) -> None:
    store = (
        create_jsonl_session_store(path) if kind == "jsonl" else create_sqlite_session_store(path)
    )
    try:
        lease = await store.claim(session_id)
    except SessionBusyError as error:
        print(f"busy {error}", flush=True)
        return
    print("held", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.read)
    await lease.release()
    print("released", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
