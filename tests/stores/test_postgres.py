"""PostgreSQL specifics on a real throwaway server: the stored text, the
schema versions, and every way the server can fail a call."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.pg_server import PgServer, free_port

from prism.errors import StoreError
from prism.stores import read_jsonl_session_entries
from prism.stores.postgres import SCHEMA_VERSION, create_postgres_session_store
from prism.stores.postgres.schema import MIGRATIONS, Migration
from prism.stores.postgres.store import PostgresSessionStore

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "sessions" / "all-kinds.jsonl"
CANARY = "canary-pw-7f3a9c"


def entry(i: int, session: str = "s1") -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": session,
        "parentId": None,
        "kind": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": f"hello {i}"}]},
    }


def admin(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


@pytest.fixture
async def store(pg_dsn: str) -> AsyncIterator[PostgresSessionStore]:
    async with create_postgres_session_store(pg_dsn, connect_timeout=5) as s:
        yield s


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


# --- exact wire JSON and schema ----------------------------------------------------


async def test_rows_hold_the_exact_wire_json(store: PostgresSessionStore, pg_dsn: str) -> None:
    entries, _ = await read_jsonl_session_entries(GOLDEN)
    await store.append_many(entries)
    with admin(pg_dsn) as conn:
        rows = conn.execute("SELECT entry FROM prism_entries ORDER BY seq").fetchall()
    assert "".join(r[0] + "\n" for r in rows).encode() == GOLDEN.read_bytes()


async def test_schema_is_created_on_first_use_and_versioned(
    store: PostgresSessionStore, pg_dsn: str
) -> None:
    with admin(pg_dsn) as conn:
        assert conn.execute("SELECT to_regclass('prism_entries')").fetchone() == (None,)
    assert await store.list("s1") == []
    with admin(pg_dsn) as conn:
        versions = conn.execute("SELECT version FROM prism_schema_version").fetchall()
    assert versions == [(v.version,) for v in MIGRATIONS]
    assert SCHEMA_VERSION == MIGRATIONS[-1].version


async def test_a_later_schema_version_migrates_and_keeps_the_data(pg_dsn: str) -> None:
    async with PostgresSessionStore(dsn=pg_dsn) as old:
        await old.append(entry(1))  # type: ignore[arg-type]
    later = (
        *MIGRATIONS,
        Migration(
            SCHEMA_VERSION + 1,
            "test: a created_at column",
            ("ALTER TABLE prism_entries ADD COLUMN created_at timestamptz DEFAULT now()",),
        ),
    )
    async with PostgresSessionStore(dsn=pg_dsn, migrations=later) as new:
        assert [e["id"] for e in await new.list("s1")] == ["e1"]
        await new.append(entry(2))  # type: ignore[arg-type]
    with admin(pg_dsn) as conn:
        assert conn.execute("SELECT max(version) FROM prism_schema_version").fetchone() == (
            SCHEMA_VERSION + 1,
        )
        assert conn.execute("SELECT count(created_at) FROM prism_entries").fetchone() == (2,)


async def test_a_failed_migration_leaves_the_old_version(pg_dsn: str) -> None:
    async with PostgresSessionStore(dsn=pg_dsn) as old:
        await old.append(entry(1))  # type: ignore[arg-type]
    broken = (*MIGRATIONS, Migration(SCHEMA_VERSION + 1, "broken", ("ALTER TABLE nope ADD x int",)))
    async with PostgresSessionStore(dsn=pg_dsn, migrations=broken) as new:
        with pytest.raises(StoreError, match=r"schema setup .* failed: .*the schema is unchanged"):
            await new.list("s1")
    with admin(pg_dsn) as conn:
        assert conn.execute("SELECT max(version) FROM prism_schema_version").fetchone() == (
            SCHEMA_VERSION,
        )


async def test_a_newer_database_is_refused(pg_dsn: str) -> None:
    async with PostgresSessionStore(dsn=pg_dsn) as s:
        await s.append(entry(1))  # type: ignore[arg-type]
    with admin(pg_dsn) as conn:
        conn.execute(
            "INSERT INTO prism_schema_version (version, description) VALUES (%s, 'future')",
            [SCHEMA_VERSION + 5],
        )
    async with PostgresSessionStore(dsn=pg_dsn) as s:
        with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 5}, newer"):
            await s.list("s1")


async def test_user_pool_is_used_and_left_open(pg_dsn: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    async with AsyncConnectionPool(pg_dsn, min_size=1, max_size=2, open=False) as pool:
        async with create_postgres_session_store(pool=pool) as s:
            await s.append_many([entry(1), entry(2)])  # type: ignore[list-item]
            assert [e["id"] for e in await s.list("s1")] == ["e1", "e2"]
        assert not pool.closed
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) FROM prism_entries")
            assert await cur.fetchone() == (2,)


async def test_a_user_pool_that_is_not_open_is_named(pg_dsn: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(pg_dsn, open=False)
    store = create_postgres_session_store(pool=pool)
    with pytest.raises(StoreError, match="pool given to the PostgreSQL session store is not open"):
        await store.list("s1")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of dsn= or pool="),
        ({"dsn": "x", "pool": object()}, "exactly one of dsn= or pool="),
        ({"pool": object()}, "pool must be a psycopg_pool.AsyncConnectionPool"),
        ({"dsn": "host=x", "connect_timeout": 0}, "connect_timeout must be > 0"),
        ({"dsn": "host=x", "statement_timeout_ms": -1}, "statement_timeout_ms must be >= 0"),
        ({"dsn": "host=x", "min_size": 3, "max_size": 2}, "min_size <= max_size"),
        ({"dsn": f"host=x password={CANARY} nonsense"}, "could not be parsed"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(StoreError, match=message) as info:
        create_postgres_session_store(**kwargs)
    assert_no_secret(str(info.value), CANARY)


def test_repr_names_the_target_only() -> None:
    s = create_postgres_session_store(f"postgresql://bob:{CANARY}@db.example:6543/app")
    assert repr(s) == "<PostgresSessionStore db.example:6543/app>"


# --- failures: each a clear StoreError, nothing written, the next call works -------


async def test_unreachable_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dsn = f"host=127.0.0.1 port={free_port()} dbname=x user=prism password={CANARY}"
    async with create_postgres_session_store(dsn, connect_timeout=0.5) as s:
        with pytest.raises(
            StoreError, match=r"cannot connect to 127.0.0.1:.*connection refused"
        ) as e:
            await s.append(entry(1))  # type: ignore[arg-type]
    assert e.value.code == "store_unavailable"
    assert_no_secret(str(e.value), CANARY, dsn)
    assert_no_secret(caplog.text, CANARY)


async def test_wrong_credentials(pg_server: PgServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dsn = pg_server.dsn(password=CANARY)
    async with create_postgres_session_store(dsn, connect_timeout=0.5) as s:
        with pytest.raises(StoreError, match="authentication failed") as e:
            await s.list("s1")
        with pytest.raises(StoreError, match="authentication failed"):
            await s.claim("s1")
    assert_no_secret(str(e.value), CANARY, dsn)
    assert_no_secret(caplog.text, CANARY)


async def test_wrong_credentials_in_a_run_never_reach_events(pg_server: PgServer) -> None:
    from prism.providers import create_mock_provider, provider_done, provider_text_delta
    from prism.runtime import create_agent

    dsn = pg_server.dsn(password=CANARY)
    store = create_postgres_session_store(dsn, connect_timeout=0.5)
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider([[provider_text_delta("hi"), provider_done()]]),
        store=store,
    )
    session = agent.create_session("s1")
    events: list[Any] = []
    session.subscribe(events.append)
    with pytest.raises(StoreError, match="authentication failed") as e:
        await session.run("hello")
    await store.aclose()
    assert_no_secret(repr(events) + str(e.value), CANARY)


async def test_server_down_then_back(
    pg_server: PgServer, pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with create_postgres_session_store(pg_dsn, connect_timeout=0.5) as s:
        await s.append(entry(1))  # type: ignore[arg-type]
        pg_server.stop()
        try:
            with pytest.raises(StoreError, match=r"cannot connect|connection .*lost") as e:
                await s.append_many([entry(2), entry(3)])  # type: ignore[list-item]
        finally:
            pg_server.start()
        await s.append_many([entry(2), entry(3)])  # type: ignore[list-item]
        assert [x["id"] for x in await s.list("s1")] == ["e1", "e2", "e3"]
    assert_no_secret(str(e.value) + caplog.text, pg_server.password)


def _wait_for_backend(conn: psycopg.Connection[Any], where: str) -> int:
    """The pid of a backend matching ``where``, polling pg_stat_activity
    (each poll is a server round trip: no sleeping)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = conn.execute(
            f"SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND {where}"
        ).fetchone()
        if row:
            return int(row[0])
    raise AssertionError(f"no backend matched {where}")


async def test_connection_dropped_mid_batch(store: PostgresSessionStore, pg_dsn: str) -> None:
    import anyio

    await store.append(entry(1))  # schema in place
    batch = [entry(2), entry(3), entry(4)]
    blocker = admin(pg_dsn)
    # An uncommitted row with the batch's second id: the batch inserts e2,
    # then waits on the unique index for e3, mid-transaction.
    blocker.execute("BEGIN")
    blocker.execute(
        "INSERT INTO prism_entries (id, session_id, entry) VALUES ('e3', 'other', '{}')"
    )
    failure: list[BaseException] = []

    async def append() -> None:
        try:
            await store.append_many(batch)  # type: ignore[arg-type]
        except StoreError as exc:
            failure.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(append)
        with admin(pg_dsn) as killer:
            pid = await anyio.to_thread.run_sync(
                _wait_for_backend,
                killer,
                "wait_event_type = 'Lock' AND query LIKE '%%INSERT INTO prism_entries%%'",
            )
            assert killer.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    blocker.execute("ROLLBACK")
    blocker.close()
    assert len(failure) == 1
    assert "connection" in str(failure[0]) and "nothing was written" in str(failure[0])
    assert [e["id"] for e in await store.list("s1")] == ["e1"]
    assert await store.get("e2") is None
    await store.append_many(batch)  # type: ignore[arg-type]
    assert [e["id"] for e in await store.list("s1")] == ["e1", "e2", "e3", "e4"]


async def test_statement_timeout(pg_dsn: str) -> None:
    async with create_postgres_session_store(pg_dsn, statement_timeout_ms=200) as s:
        await s.append(entry(1))  # type: ignore[arg-type]
        with admin(pg_dsn) as blocker:
            blocker.execute("BEGIN")
            blocker.execute("LOCK TABLE prism_entries IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreError, match=r"statement timeout.*nothing was written"):
                await s.append_many([entry(2), entry(3)])  # type: ignore[list-item]
            with pytest.raises(StoreError, match=r"list .* failed: statement timeout"):
                await s.list("s1")
            blocker.execute("ROLLBACK")
        assert [e["id"] for e in await s.list("s1")] == ["e1"]
        await s.append_many([entry(2), entry(3)])  # type: ignore[list-item]
        assert [e["id"] for e in await s.list("s1")] == ["e1", "e2", "e3"]


async def test_closed_store_refuses_calls(pg_dsn: str) -> None:
    s = create_postgres_session_store(pg_dsn)
    await s.append(entry(1))  # type: ignore[arg-type]
    await s.aclose()
    with pytest.raises(StoreError, match="closed"):
        await s.list("s1")
    with pytest.raises(StoreError, match="closed"):
        await s.claim("s1")


# --- packaging ----------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_import_prism_does_not_import_psycopg() -> None:
    done = _python(
        "import sys, prism, prism.stores; print(sorted(m for m in sys.modules if 'psycopg' in m))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_missing_extra_names_it() -> None:
    done = _python(
        "import sys; sys.modules['psycopg'] = None\n"
        "try:\n    import prism.stores.postgres\n"
        "except ImportError as e:\n    print(e)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'prism-harness[postgres]'" in done.stdout


async def test_nul_in_ids_is_refused_clearly(store: PostgresSessionStore) -> None:
    bad = entry(1, session="a\x00b")
    with pytest.raises(StoreError, match="'sessionId' contains a NUL"):
        await store.append_many([entry(2), bad])  # type: ignore[list-item]
    assert await store.list_sessions() == []
    assert await store.list("a\x00b") == []
    assert await store.get("e\x001") is None


class CuttingProxy:
    """A TCP proxy in front of the server that, when armed, lets the next
    append reach the server (which executes and commits it) and then cuts
    the client's connection instead of delivering the reply: a network
    failure after COMMIT, the one case where the client cannot know."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.armed = False
        self.cuts = 0

    async def __aenter__(self) -> CuttingProxy:
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()

    async def _handle(self, client_r: Any, client_w: Any) -> None:
        import asyncio
        import contextlib

        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        append_sent = asyncio.Event()

        async def upstream() -> None:
            while data := await client_r.read(65536):
                if self.armed and b"INSERT INTO prism_entries" in data:
                    self.armed = False
                    append_sent.set()
                server_w.write(data)
                await server_w.drain()
            server_w.close()

        async def downstream() -> None:
            while data := await server_r.read(65536):
                if append_sent.is_set():
                    # The server answered, so it has committed: drop the
                    # answer and the client's connection.
                    self.cuts += 1
                    client_w.transport.abort()
                    server_w.close()
                    return
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        with contextlib.suppress(OSError, ConnectionError):
            await asyncio.gather(upstream(), downstream())


async def test_connection_cut_after_commit_counts_as_written(
    pg_server: PgServer, pg_dsn: str
) -> None:
    async with CuttingProxy(pg_server.port) as proxy:
        dsn = pg_dsn.replace(f"port={pg_server.port}", f"port={proxy.port}")
        async with create_postgres_session_store(dsn, connect_timeout=5) as s:
            await s.append(entry(1))  # type: ignore[arg-type]
            proxy.armed = True
            # The reply never arrives; the store checks on a fresh connection,
            # finds the whole batch stored, and reports success.
            await s.append_many([entry(2), entry(3)])  # type: ignore[list-item]
            assert proxy.cuts == 1
            assert [e["id"] for e in await s.list("s1")] == ["e1", "e2", "e3"]
            await s.append(entry(4))  # type: ignore[arg-type]
