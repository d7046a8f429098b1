"""A PostgreSQL session lease lost while its holder runs, on a real server:
the loss is seen (connection terminated, idle timeout, lock gone), the store
refuses the holder's next append, and a cancelled claim never takes another
session's lease with it. Two stores stand for two workers."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from tests.pg_server import PgServer

from prism.errors import SessionBusyError, SessionLeaseLostError
from prism.stores.postgres import create_postgres_session_store
from prism.stores.postgres.store import PostgresSessionStore

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def entry(entry_id: str, session: str = "s1") -> Any:
    return {
        "id": entry_id,
        "sessionId": session,
        "parentId": None,
        "kind": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": entry_id}]},
    }


def lease_pid(store: PostgresSessionStore) -> int:
    conn = store._leases._conn
    assert conn is not None
    return int(conn.info.backend_pid)


def wait_backend_gone(dsn: str, pid: int) -> None:
    """Until the server has ended backend ``pid`` (each poll is a round trip)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                return
    raise AssertionError(f"backend {pid} is still there")


def terminate(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    wait_backend_gone(dsn, pid)


def stored_ids(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [str(r[0]) for r in conn.execute("SELECT id FROM prism_entries ORDER BY seq")]


@pytest.fixture
async def stores(pg_dsn: str) -> AsyncIterator[tuple[PostgresSessionStore, PostgresSessionStore]]:
    async with (
        create_postgres_session_store(pg_dsn, connect_timeout=5) as a,
        create_postgres_session_store(pg_dsn, connect_timeout=5) as b,
    ):
        yield a, b


async def test_a_terminated_lease_connection_fences_the_next_append(
    stores: tuple[PostgresSessionStore, PostgresSessionStore], pg_dsn: str
) -> None:
    a, b = stores
    lease = await a.claim("s1")
    await a.append(entry("a1"))
    terminate(pg_dsn, lease_pid(a))
    # Seen without any further lease call on a: the server's goodbye is on
    # the idle lease connection.
    assert lease.lost
    taken = await b.claim("s1")  # a second worker takes the session
    await b.append(entry("b1"))
    with pytest.raises(SessionLeaseLostError, match=r"lease on session 's1' was lost") as info:
        await a.append(entry("a2"))
    assert "nothing was written" in str(info.value)
    assert info.value.code == "session_lease_lost"
    await a.append(entry("x1", session="other"))  # sessions a holds no lease on still work
    assert stored_ids(pg_dsn) == ["a1", "b1", "x1"]
    # Until the lost lease is released, a does not hand the session to anyone in-process.
    with pytest.raises(SessionBusyError, match="lease was lost"):
        await a.claim("s1")
    await lease.release()
    with pytest.raises(SessionBusyError, match="another process or host"):
        await a.claim("s1")
    await taken.release()
    async with await a.claim("s1") as again:
        assert not again.lost  # type: ignore[attr-defined]
        await a.append(entry("a3"))
    assert stored_ids(pg_dsn) == ["a1", "b1", "x1", "a3"]


async def test_a_lease_lock_gone_on_a_live_connection_fences_the_append(
    stores: tuple[PostgresSessionStore, PostgresSessionStore], pg_dsn: str
) -> None:
    """The client cannot see this loss (the connection is fine); the append
    statement finds the lease lock free on the server and refuses."""
    a, b = stores
    lease = await a.claim("s1")
    await a.append(entry("a1"))
    conn = a._leases._conn
    assert conn is not None
    await conn.execute("SELECT pg_advisory_unlock_all()")
    assert not lease.lost  # nothing to see without asking the server
    with pytest.raises(SessionLeaseLostError, match="its lock is no longer held"):
        await a.append_many([entry("a2"), entry("a3")])
    assert lease.lost
    assert stored_ids(pg_dsn) == ["a1"]
    taken = await b.claim("s1")
    await a.append(entry("x1", session="other"))
    await taken.release()
    await lease.release()


async def test_a_lease_taken_over_unheard_is_fenced_by_its_token(
    stores: tuple[PostgresSessionStore, PostgresSessionStore], pg_dsn: str
) -> None:
    """The partition case: a's lease is gone on the server and b claimed the
    session, but nothing reached a (its connection looks fine). b's lock
    makes the lock check pass; the fencing token does not."""
    a, b = stores
    lease = await a.claim("s1")
    await a.append(entry("a1"))
    conn = a._leases._conn
    assert conn is not None
    await conn.execute("SELECT pg_advisory_unlock_all()")  # lost without a's knowledge
    taken = await b.claim("s1")
    assert taken.token > lease.token  # type: ignore[attr-defined]
    await b.append(entry("b1"))
    assert not lease.lost
    with pytest.raises(SessionLeaseLostError, match=r"taken over: a newer claim") as info:
        await a.append(entry("a2"))
    assert "nothing was written" in str(info.value)
    assert lease.lost
    await b.append(entry("b2"))  # the new holder is unaffected
    assert stored_ids(pg_dsn) == ["a1", "b1", "b2"]
    await lease.release()
    await taken.release()


async def test_the_lease_connection_idle_timeout_is_detected(
    stores: tuple[PostgresSessionStore, PostgresSessionStore], pg_dsn: str
) -> None:
    a, b = stores
    lease = await a.claim("s1")
    pid = lease_pid(a)
    conn = a._leases._conn
    assert conn is not None
    await conn.execute("SET idle_session_timeout = 50")
    wait_backend_gone(pg_dsn, pid)
    assert lease.lost
    taken = await b.claim("s1")
    with pytest.raises(SessionLeaseLostError, match="'s1' was lost"):
        await a.append(entry("a1"))
    assert stored_ids(pg_dsn) == []
    await taken.release()
    await lease.release()


async def test_a_server_idle_session_timeout_spares_the_lease_connection(
    pg_server: PgServer, pg_dsn: str
) -> None:
    """The lease connection is idle as long as a run lasts; the server's
    idle_session_timeout must not end it (the store turns it off there)."""
    # Long enough that a fresh connection is not reaped before its first use
    # on a loaded machine; the test waits for the reaping, not for a time.
    dsn = pg_dsn.replace("options='", "options='-c idle_session_timeout=2000 ")
    async with (
        create_postgres_session_store(dsn, statement_timeout_ms=None) as a,
        create_postgres_session_store(pg_dsn) as b,
    ):
        lease = await a.claim("s1")
        holder = lease_pid(a)
        async with a._pool.connection() as pooled:
            other = int(pooled.info.backend_pid)
        # A connection of the same store that went idle later is reaped first.
        wait_backend_gone(pg_dsn, other)
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            alive = admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [holder])
            assert alive.fetchone() == (1,)
        assert not lease.lost
        with pytest.raises(SessionBusyError):
            await b.claim("s1")
        await a.append(entry("a1"))
        await lease.release()


class HoldingProxy:
    """A TCP proxy that, when armed, holds back the server's reply to the
    next advisory-lock claim until ``release`` is set: a claim caught in
    flight, to be cancelled there."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.armed = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def __aenter__(self) -> HoldingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        self._server.close()

    async def _handle(self, client_r: Any, client_w: Any) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        hold = asyncio.Event()

        async def upstream() -> None:
            while data := await client_r.read(65536):
                if self.armed and b"pg_try_advisory_lock" in data:
                    self.armed = False
                    hold.set()
                server_w.write(data)
                await server_w.drain()
            server_w.close()

        async def downstream() -> None:
            while data := await server_r.read(65536):
                if hold.is_set():
                    hold.clear()
                    self.holding.set()
                    await self.release.wait()
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        with contextlib.suppress(OSError, ConnectionError):
            await asyncio.gather(upstream(), downstream())


async def test_a_cancelled_claim_leaves_other_leases_alone(
    pg_server: PgServer, pg_dsn: str
) -> None:
    async with HoldingProxy(pg_server.port) as proxy:
        dsn = pg_dsn.replace(f"port={pg_server.port}", f"port={proxy.port}")
        async with (
            create_postgres_session_store(dsn, connect_timeout=5) as a,
            create_postgres_session_store(pg_dsn, connect_timeout=5) as b,
        ):
            held = await a.claim("A")
            proxy.armed = True
            scope = anyio.CancelScope()

            async def claim_b() -> None:
                with scope:
                    await a.claim("B")

            async with anyio.create_task_group() as tg:
                tg.start_soon(claim_b)
                await proxy.holding.wait()  # the claim of B is on the wire
                scope.cancel()
                await anyio.lowlevel.checkpoint()
                proxy.release.set()
            assert scope.cancelled_caught
            assert not held.lost
            with pytest.raises(SessionBusyError):
                await b.claim("A")  # A's lease survived the cancelled claim
            await (await b.claim("B")).release()  # and B was not left locked
            await a.append(entry("a1", session="A"))
            await held.release()


@pytest.mark.parametrize("loss", ["terminated", "taken over unheard"])
async def test_a_run_whose_lease_is_lost_is_fenced_before_its_next_append(
    stores: tuple[PostgresSessionStore, PostgresSessionStore], pg_dsn: str, loss: str
) -> None:
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    a, b = stores
    in_model = anyio.Event()
    answer = anyio.Event()

    async def model(request: Any) -> list[Any]:
        in_model.set()
        await answer.wait()
        return [provider_text_delta("late answer"), provider_done()]

    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(model),
        store=a,
    )
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await agent.create_session("s1").run("first")
        except Exception as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await in_model.wait()
        held = a._leases._held["s1"]
        if loss == "terminated":
            terminate(pg_dsn, lease_pid(a))
        else:  # a partition: the lock is gone on the server, a hears nothing
            lease_conn = a._leases._conn
            assert lease_conn is not None
            await lease_conn.execute("SELECT pg_advisory_unlock_all()")
        taken = await b.claim("s1")  # held while a's run goes on
        await b.append({**entry("b1"), "parentId": None})
        answer.set()
    await taken.release()
    assert held.lost or not held.held
    assert len(failures) == 1 and isinstance(failures[0], SessionLeaseLostError), failures
    if loss != "terminated":
        assert "taken over" in str(failures[0])
    ids = stored_ids(pg_dsn)
    assert "b1" in ids and len(ids) == 2  # the run's input, then b's entry: no late answer


def test_more_than_1024_open_files_do_not_break_the_store(pg_dsn: str) -> None:
    """select.select fails past descriptor 1,024; the store's connection
    checks must not (a real process with 1,100 more open files)."""
    code = (
        "import os, resource, sys, anyio\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))\n"
        "held = [os.open('/dev/null', os.O_RDONLY) for _ in range(1100)]\n"
        "assert max(held) >= 1024\n"
        "from prism.stores.postgres import create_postgres_session_store\n"
        "async def main():\n"
        "    async with create_postgres_session_store(sys.argv[1], connect_timeout=3) as s:\n"
        "        e = {'id': 'e1', 'sessionId': 's1', 'parentId': None, 'kind': 'message',\n"
        "             'message': {'role': 'user', 'content': []}}\n"
        "        async with await s.claim('s1') as lease:\n"
        "            await s.append(e)\n"
        "            assert not lease.lost\n"
        "            for _ in range(3):\n"
        "                assert [x['id'] for x in await s.list('s1')] == ['e1']\n"
        "    print('ok')\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, pg_dsn],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


async def test_a_user_pool_gets_its_lease_connection_back_unchanged(pg_dsn: str) -> None:
    """The store tunes its lease connection (keepalives, no idle timeout);
    a caller's pool gets that connection back with its own settings."""
    from psycopg_pool import AsyncConnectionPool

    dsn = pg_dsn.replace("options='", "options='-c idle_session_timeout=3600000 ")
    async with AsyncConnectionPool(dsn, min_size=1, max_size=1, open=False) as pool:
        async with create_postgres_session_store(pool=pool) as store:
            await (await store.claim("s1")).release()
            conn = store._leases._conn
            assert conn is not None
            cur = await conn.execute("SHOW idle_session_timeout")
            assert await cur.fetchone() == ("0",)
        async with pool.connection() as again:
            assert again is conn
            cur = await again.execute("SHOW idle_session_timeout")
            assert await cur.fetchone() == ("1h",)
            cur = await again.execute("SHOW tcp_keepalives_idle")
            assert await cur.fetchone() != ("10",)
