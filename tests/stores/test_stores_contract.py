"""One contract, every store: memory, JSONL, SQLite and PostgreSQL must behave the same."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from prism.errors import DuplicateEntryError, SessionBusyError, StoreError
from prism.stores import (
    LeasingSessionStore,
    SessionStore,
    create_jsonl_session_store,
    create_memory_session_store,
    create_sqlite_session_store,
)

pytestmark = pytest.mark.anyio

KINDS = ["memory", "jsonl", "sqlite", "postgres"]


def entry(i: int, session: str = "s1", parent: str | None = None, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"e{i}",
        "sessionId": session,
        "parentId": parent,
        "kind": "message",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": f"hello {i}"}]},
    }
    base.update(extra)
    return base


class Opener:
    """Opens (and re-opens) one store of a kind on one path."""

    def __init__(self, kind: str, path: Path, dsn: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.dsn = dsn
        self.opened: list[Any] = []
        self._memory = create_memory_session_store()

    def __call__(self) -> SessionStore:
        store: Any
        if self.kind == "memory":
            return self._memory
        if self.kind == "jsonl":
            store = create_jsonl_session_store(self.path / "sessions.jsonl")
        elif self.kind == "postgres":
            from prism.stores.postgres import create_postgres_session_store

            store = create_postgres_session_store(self.dsn)
        else:
            store = create_sqlite_session_store(self.path / "sessions.db")
        self.opened.append(store)
        return store  # type: ignore[no-any-return]


@pytest.fixture(params=KINDS)
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    # PostgreSQL: a fresh database on the suite's throwaway server per test.
    dsn = request.getfixturevalue("pg_dsn") if request.param == "postgres" else None
    op = Opener(request.param, tmp_path, dsn)
    yield op
    for store in op.opened:
        if hasattr(store, "aclose"):
            await store.aclose()


@pytest.fixture
def store(opener: Opener) -> SessionStore:
    return opener()


async def ids(store: SessionStore, session: str = "s1") -> list[str]:
    return [e["id"] for e in await store.list(session)]


async def test_empty_store(store: SessionStore) -> None:
    assert await store.list("s1") == []
    assert await store.get("nope") is None
    assert await store.list_sessions() == []


async def test_append_list_get_round_trip(store: SessionStore) -> None:
    first = entry(1)
    await store.append(first)  # type: ignore[arg-type]
    await store.append_many([entry(2, parent="e1"), entry(3, parent="e2")])  # type: ignore[list-item]
    assert await ids(store) == ["e1", "e2", "e3"]
    assert await store.get("e2") == entry(2, parent="e1")
    assert (await store.list("s1"))[0] == first


async def test_order_is_append_order_across_sessions(store: SessionStore) -> None:
    await store.append(entry(1, "b"))  # type: ignore[arg-type]
    await store.append(entry(2, "a"))  # type: ignore[arg-type]
    await store.append_many([entry(3, "b"), entry(4, "a"), entry(0, "b")])  # type: ignore[list-item]
    assert await ids(store, "b") == ["e1", "e3", "e0"]
    assert await ids(store, "a") == ["e2", "e4"]
    assert await store.list_sessions() == ["b", "a"]


async def test_caller_mutation_does_not_rewrite_history(store: SessionStore) -> None:
    original = entry(1)
    await store.append(original)  # type: ignore[arg-type]
    original["message"]["content"][0]["text"] = "changed"
    got = await store.get("e1")
    assert got is not None
    assert got["message"]["content"][0]["text"] == "hello 1"  # type: ignore[typeddict-item]


async def test_duplicate_id_refused_and_nothing_written(store: SessionStore) -> None:
    await store.append(entry(1))  # type: ignore[arg-type]
    with pytest.raises(DuplicateEntryError, match="duplicate session entry id 'e1'"):
        await store.append(entry(1, summary="other"))  # type: ignore[arg-type]
    assert await ids(store) == ["e1"]


async def test_duplicate_inside_batch_refused(store: SessionStore) -> None:
    with pytest.raises(DuplicateEntryError, match="'e2'"):
        await store.append_many([entry(1), entry(2), entry(2)])  # type: ignore[list-item]
    assert await ids(store) == []
    assert await store.list_sessions() == []


async def test_batch_is_atomic_when_one_id_exists(store: SessionStore) -> None:
    await store.append(entry(2))  # type: ignore[arg-type]
    with pytest.raises(DuplicateEntryError, match="'e2'"):
        await store.append_many([entry(1), entry(2), entry(3)])  # type: ignore[list-item]
    assert await ids(store) == ["e2"]
    assert await store.get("e1") is None
    await store.append_many([entry(1), entry(3)])  # type: ignore[list-item]
    assert await ids(store) == ["e2", "e1", "e3"]


async def test_empty_batch_is_a_no_op(store: SessionStore) -> None:
    await store.append_many([])
    assert await store.list_sessions() == []


def _bad(mutate: Callable[[dict[str, Any]], Any]) -> Any:
    value = entry(9)
    result = mutate(value)
    return value if result is None else result


CHEAP_BAD = [
    pytest.param(lambda e: "not a dict", "must be a dict", id="not-dict"),
    pytest.param(lambda e: e.pop("id") and None, "'id'", id="missing-id"),
    pytest.param(lambda e: e.update(sessionId=""), "'sessionId'", id="empty-session"),
    pytest.param(lambda e: e.update(parentId=3), "'parentId'", id="int-parent"),
    pytest.param(lambda e: e.pop("parentId") and None, "'parentId'", id="missing-parent"),
    pytest.param(lambda e: e.update(kind="note"), "'kind'", id="unknown-kind"),
]

DEEP_BAD = [
    pytest.param(
        lambda e: e.update(metadata={"x": {1, 2}}), "not JSON-serializable", id="set-value"
    ),
    pytest.param(lambda e: e.update(metadata={"x": math.nan}), "not JSON-serializable", id="nan"),
    pytest.param(
        lambda e: e.update(metadata={"x": "\ud800"}), "not JSON-serializable", id="lone-surrogate"
    ),
    pytest.param(lambda e: e.update(kind="summary"), "invalid shape", id="summary-without-text"),
    pytest.param(lambda e: e.update(message="hi"), "invalid shape", id="message-not-object"),
]


@pytest.mark.parametrize(("mutate", "message"), CHEAP_BAD + DEEP_BAD)
async def test_bad_entry_refused_with_clear_error_and_nothing_written(
    opener: Opener,
    mutate: Callable[[dict[str, Any]], Any],
    message: str,
    request: pytest.FixtureRequest,
) -> None:
    store = opener()
    await store.append(entry(1))  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=message):
        await store.append_many([entry(2), _bad(mutate)])  # type: ignore[list-item]
    assert await ids(store) == ["e1"]
    assert await store.get("e2") is None
    # the store stays usable
    await store.append(entry(2))  # type: ignore[arg-type]
    assert await ids(store) == ["e1", "e2"]


async def test_errors_never_echo_entry_content(store: SessionStore) -> None:
    secret = "sk-live-0123456789abcdef"
    with pytest.raises(StoreError) as info:
        await store.append(entry(1, kind="summary", metadata={"token": secret}))  # type: ignore[arg-type]
    assert secret not in str(info.value)


async def test_unicode_round_trip(store: SessionStore) -> None:
    text = 'héllo — 日本語 🚀 \u2028 line\nsep "quoted" \\ tab\t e\u0301 \x00'
    e = entry(1, metadata={"ключ": text})
    e["message"]["content"][0]["text"] = text
    await store.append(e)  # type: ignore[arg-type]
    assert await store.get("e1") == e


async def test_reopen_sees_everything(opener: Opener) -> None:
    if opener.kind == "memory":
        pytest.skip("memory store does not persist")
    first = opener()
    await first.append_many([entry(1), entry(2, "s2"), entry(3)])  # type: ignore[list-item]
    second = opener()
    assert await ids(second) == ["e1", "e3"]
    assert await second.list_sessions() == ["s1", "s2"]
    assert await second.get("e2") == entry(2, "s2")


async def test_duplicate_across_instances_on_one_file(opener: Opener) -> None:
    if opener.kind == "memory":
        pytest.skip("memory stores do not share state")
    a, b = opener(), opener()
    await a.append(entry(1))  # type: ignore[arg-type]
    assert await ids(b) == ["e1"]
    await b.append(entry(2))  # type: ignore[arg-type]
    with pytest.raises(DuplicateEntryError, match="'e2'"):
        await a.append(entry(2))  # type: ignore[arg-type]
    with pytest.raises(DuplicateEntryError, match="'e1'"):
        await b.append_many([entry(3), entry(1)])  # type: ignore[list-item]
    assert await ids(a) == ["e1", "e2"]
    assert await ids(b) == ["e1", "e2"]


async def test_concurrent_appends_in_one_process(store: SessionStore) -> None:
    import anyio

    async def writer(w: int) -> None:
        for i in range(25):
            await store.append(entry(w * 1000 + i))  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        for w in range(4):
            tg.start_soon(writer, w)
    got = await ids(store)
    assert sorted(got) == sorted(f"e{w * 1000 + i}" for w in range(4) for i in range(25))
    for w in range(4):  # each writer's own appends keep their order
        mine = [x for x in got if int(x[1:]) // 1000 == w]
        assert mine == [f"e{w * 1000 + i}" for i in range(25)]


async def test_append_many_takes_any_iterable_but_not_a_single_entry(store: SessionStore) -> None:
    await store.append_many(entry(i) for i in range(3))  # type: ignore[arg-type]
    assert await ids(store) == ["e0", "e1", "e2"]
    for bad in (entry(5), "e5", 5):
        with pytest.raises(StoreError, match="append_many expects a sequence of session entries"):
            await store.append_many(bad)  # type: ignore[arg-type]
    assert await ids(store) == ["e0", "e1", "e2"]


# --- session leases: one active run per session ------------------------------------


async def test_claim_is_exclusive_per_session_and_released(opener: Opener) -> None:
    store = opener()
    assert isinstance(store, LeasingSessionStore)
    lease = await store.claim("s1")
    assert lease.held and lease.session_id == "s1"
    with pytest.raises(SessionBusyError, match="session 's1' is busy"):
        await store.claim("s1")
    other = await store.claim("s2")  # another session is independent
    await lease.release()
    await lease.release()  # idempotent
    assert not lease.held
    again = await store.claim("s1")
    await again.release()
    await other.release()


async def test_claim_as_context_manager_releases_on_error(opener: Opener) -> None:
    store = opener()
    assert isinstance(store, LeasingSessionStore)
    with pytest.raises(RuntimeError, match="boom"):
        async with await store.claim("s1"):
            with pytest.raises(SessionBusyError):
                await store.claim("s1")
            raise RuntimeError("boom")
    async with await store.claim("s1") as lease:
        assert lease.held


async def test_claim_excludes_another_instance_on_the_same_data(opener: Opener) -> None:
    a, b = opener(), opener()
    assert isinstance(a, LeasingSessionStore) and isinstance(b, LeasingSessionStore)
    lease = await a.claim("shared")
    with pytest.raises(SessionBusyError, match="'shared' is busy"):
        await b.claim("shared")
    await lease.release()
    await (await b.claim("shared")).release()


async def test_claim_does_not_block_appends_or_reads(opener: Opener) -> None:
    """A lease serializes runs, not data access: entries of a held session
    are still readable and another writer's append still lands."""
    a, b = opener(), opener()
    assert isinstance(a, LeasingSessionStore)
    async with await a.claim("s1"):
        await b.append(entry(1))  # type: ignore[arg-type]
        assert await ids(a) == ["e1"]


@pytest.mark.parametrize(
    "session_id", ["a/b/../c", "x" * 5000, "nul\x00byte", "ünïcødé 🚀", ".", ".."]
)
async def test_claim_takes_any_session_id(opener: Opener, session_id: str) -> None:
    store = opener()
    assert isinstance(store, LeasingSessionStore)
    async with await store.claim(session_id):
        with pytest.raises(SessionBusyError):
            await store.claim(session_id)
    await (await store.claim(session_id)).release()


@pytest.mark.parametrize("bad", ["", None, 3])
async def test_claim_refuses_a_bad_session_id(opener: Opener, bad: Any) -> None:
    store = opener()
    assert isinstance(store, LeasingSessionStore)
    with pytest.raises(StoreError, match="session id must be a non-empty string"):
        await store.claim(bad)


GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "all-kinds.jsonl"


async def test_golden_file_round_trips(store: SessionStore) -> None:
    from prism.stores import read_jsonl_session_entries

    entries, errors = await read_jsonl_session_entries(GOLDEN)
    assert errors == []
    await store.append(entries[0])
    await store.append_many(entries[1:6])
    for e in entries[6:]:
        await store.append(e)
    assert await store.list("session_golden") == entries
    for e in entries:
        assert await store.get(e["id"]) == e


async def test_branch_reads_and_labels(store: SessionStore) -> None:
    from prism.branching import branch_entries, children_of, labels, list_leaves

    # e1 <- e2 <- e3, and a fork e2 <- e4 <- label(e3)
    await store.append_many([entry(1), entry(2, parent="e1"), entry(3, parent="e2")])  # type: ignore[list-item]
    await store.append(entry(4, parent="e2"))  # type: ignore[arg-type]
    label = {
        "id": "l1",
        "sessionId": "s1",
        "parentId": "e4",
        "kind": "label",
        "label": "first try",
        "targetId": "e3",
    }
    await store.append(label)  # type: ignore[arg-type]
    listed = await store.list("s1")
    assert [e["id"] for e in branch_entries(listed, "e3")] == ["e1", "e2", "e3"]
    assert [e["id"] for e in branch_entries(listed, "l1")] == ["e1", "e2", "e4", "l1"]
    assert [e["id"] for e in children_of(listed, "e2")] == ["e3", "e4"]
    assert [e["id"] for e in list_leaves(listed)] == ["e3", "l1"]
    assert labels(listed) == {"e3": "first try"}
    assert await store.get("l1") == label
