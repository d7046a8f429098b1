"""Sessions on PostgreSQL: an agent run on the store, one run per session
across workers (leases), and a duplicate id refused.

Needs a database: set PRISM_POSTGRES_DSN (libpq "key=value" or a
postgresql:// URL) and install the extra: pip install 'prism-harness[postgres]'.
The store creates its tables on first use.
"""

from __future__ import annotations

import os
import sys
import uuid

import anyio

from prism import SessionBusyError, create_mock_provider
from prism.errors import DuplicateEntryError
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.stores.postgres import create_postgres_session_store


async def main(dsn: str) -> None:
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    # Two stores stand in for two worker processes (or hosts) sharing the database.
    async with (
        create_postgres_session_store(dsn) as worker_a,
        create_postgres_session_store(dsn) as worker_b,
    ):
        # 1. One run per session across workers: while a worker holds the
        #    session's lease, any other claimant is refused at once.
        lease = await worker_a.claim(session_id)
        try:
            await worker_b.claim(session_id)
        except SessionBusyError as error:
            print("worker b:", error.code)
        await lease.release()

        # 2. A run on the store (a run claims and releases its session itself).
        agent = create_agent(
            model={"provider": "mock", "model": "demo"},
            provider=create_mock_provider(
                [[provider_text_delta("Hello from Postgres."), provider_done()]]
            ),
            store=worker_a,
        )
        result = await agent.create_session(session_id).run("Hi")
        print("answer:", result.text)
        entries = await worker_b.list(session_id)
        print(
            "entries seen by b:", [e["message"]["role"] for e in entries if e["kind"] == "message"]
        )

        # 3. Ids are unique across the whole database: a duplicate is refused, nothing written.
        try:
            await worker_b.append(entries[0])
        except DuplicateEntryError as error:
            print("refused:", error.code)
        print("still:", len(await worker_a.list(session_id)), "entries")


if __name__ == "__main__":
    dsn = os.environ.get("PRISM_POSTGRES_DSN")
    if not dsn:
        sys.exit("set PRISM_POSTGRES_DSN to a PostgreSQL database (see the docstring)")
    anyio.run(main, dsn)
