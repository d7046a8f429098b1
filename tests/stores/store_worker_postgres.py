"""Subprocess body for the PostgreSQL reliability and lease tests.

The DSN comes in the PRISM_TEST_DSN environment variable (never argv).

usage:
  store_worker_postgres.py append WRITER COUNT [retry]
      append COUNT entries (every fourth append a batch of three) to three
      shared sessions, printing ``ack <id>`` after each append returned;
      with ``retry``, a failed append (server restarting) is retried until
      it lands and ``retry <reason>`` is printed for each failure.
  store_worker_postgres.py lease SESSION
      claim SESSION; print ``held <backend pid>`` (or ``busy <error>``),
      keep it until stdin reaches EOF, release, print ``released``.
  store_worker_postgres.py agent-run SESSION
      one agent run on SESSION with no explicit claim (the runtime claims);
      prints ``running`` when the model is called (the run holds the
      session), waits for a stdin line, then ``ran <answer>``; or ``busy
      <error>`` if another run holds the session.
  store_worker_postgres.py run SESSION
      claim SESSION and run a 3-turn agent session on it with the mock
      provider; print ``ran <run count>`` or ``busy <error>``. Waits for a
      line on stdin between claiming and running, so the parent can line
      every racer up before anyone releases.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from prism.errors import DuplicateEntryError, SessionBusyError, StoreError
from prism.stores.postgres import create_postgres_session_store


def entry(writer: int, i: int) -> dict[str, Any]:
    return {
        "id": f"w{writer}-{i}",
        "sessionId": f"session-{i % 3}",
        "parentId": None,
        "kind": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": f"writer {writer} entry {i} " + "x" * (i % 200)}],
        },
    }


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def append_with_retry(store: Any, batch: list[dict[str, Any]], retry: bool) -> None:
    while True:
        try:
            await store.append_many(batch)
            return
        except DuplicateEntryError:
            # Only after a failed attempt whose COMMIT outcome the store could
            # not check: the batch landed whole (ids are all-or-nothing).
            ids = [e["id"] for e in batch]
            found = [await store.get(i) for i in ids]
            if all(found):
                say("retry landed-before")
                return
            raise
        except StoreError as exc:
            if not retry:
                raise
            say(f"retry {exc.code}")
            # Wait for the server without spinning: the next attempt itself
            # waits up to connect_timeout for a connection.


async def append(writer: int, count: int, retry: bool) -> None:
    async with create_postgres_session_store(
        os.environ["PRISM_TEST_DSN"], connect_timeout=2, max_size=2
    ) as store:
        i = 0
        while i < count:
            size = 3 if i % 4 == 3 and i + 3 <= count else 1
            batch = [entry(writer, i + k) for k in range(size)]
            await append_with_retry(store, batch, retry)
            sys.stdout.write("".join(f"ack {e['id']}\n" for e in batch))
            sys.stdout.flush()
            i += size
        say("done")


async def lease(session_id: str) -> None:
    async with create_postgres_session_store(os.environ["PRISM_TEST_DSN"]) as store:
        try:
            held = await store.claim(session_id)
        except SessionBusyError as error:
            say(f"busy {error}")
            return
        conn = store._leases._conn
        say(f"held {conn.info.backend_pid if conn else '?'}")
        await anyio.to_thread.run_sync(sys.stdin.read)
        await held.release()
        say("released")


async def run(session_id: str) -> None:
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    async with create_postgres_session_store(os.environ["PRISM_TEST_DSN"]) as store:
        try:
            held = await store.claim(session_id)
        except SessionBusyError as error:
            say(f"busy {error}")
            await anyio.to_thread.run_sync(sys.stdin.readline)
            return
        say("claimed")
        await anyio.to_thread.run_sync(sys.stdin.readline)
        # The runtime claims the session's lease itself for every run, so the
        # lease that decided the race is handed back first (the losers have
        # already given up by now).
        await held.release()
        script = [[provider_text_delta(f"answer {t}"), provider_done()] for t in range(3)]
        agent = create_agent(
            model={"provider": "mock", "model": "m"},
            provider=create_mock_provider(script),
            store=store,
        )
        session = await agent.open_session(session_id)
        for turn in range(3):
            await session.run(f"turn {turn} from pid {os.getpid()}")
        say("ran 3")


async def agent_run(session_id: str) -> None:
    """One agent run, no explicit claim: the runtime claims the session.
    The model's turn waits for a line on stdin, so the parent decides how
    long the run (and its lease) lasts."""
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    async def model(request: Any) -> list[Any]:
        say("running")
        await anyio.to_thread.run_sync(sys.stdin.readline)
        return [provider_text_delta(f"answer from pid {os.getpid()}"), provider_done()]

    async with create_postgres_session_store(os.environ["PRISM_TEST_DSN"]) as store:
        agent = create_agent(
            model={"provider": "mock", "model": "m"},
            provider=create_mock_provider(model),
            store=store,
        )
        try:
            result = await agent.create_session(session_id).run(f"hi from pid {os.getpid()}")
        except SessionBusyError as error:
            say(f"busy {error}")
            return
        say(f"ran {result.text}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "agent-run":
        anyio.run(agent_run, sys.argv[2])
        sys.exit(0)
    if mode == "append":
        anyio.run(append, int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:] == ["retry"])
    elif mode == "lease":
        anyio.run(lease, sys.argv[2])
    else:
        anyio.run(run, sys.argv[2])
