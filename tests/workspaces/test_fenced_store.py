"""Leases and checkpoints with fencing on every backend: tokens only grow, a
lapsed or taken-over lease cannot renew or save, saves are a version CAS,
ownership scopes fail closed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.workspaces.conftest import OTHER, SCOPE

from prism.workspaces import (
    MemoryFencedStore,
    SqliteFencedStore,
    WorkspaceConfigError,
    WorkspaceFenceError,
    WorkspaceOwnershipError,
)
from prism.workspaces.fencing import FencedStore

pytestmark = pytest.mark.anyio


class Clock:
    """Time that passes only when a test says so (no sleeping)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[FencedStore]:
    made: FencedStore
    if request.param == "memory":
        made = MemoryFencedStore(clock=clock)
    else:
        made = SqliteFencedStore(tmp_path / "fence.db", clock=clock)
    yield made
    await made.close()


async def test_tokens_only_grow_and_a_held_lease_excludes(store: FencedStore) -> None:
    first = await store.try_acquire("ws/1", scope=SCOPE, owner="a")
    assert first is not None and first.token == 1
    assert await store.try_acquire("ws/1", scope=SCOPE, owner="b") is None
    await store.release(first)
    second = await store.try_acquire("ws/1", scope=SCOPE, owner="b")
    assert second is not None and second.token == 2
    await store.release(first)  # a stale release is a no-op: b still holds it
    assert await store.try_acquire("ws/1", scope=SCOPE, owner="c") is None


async def test_a_taken_over_lease_cannot_renew_or_save(store: FencedStore, clock: Clock) -> None:
    old = await store.try_acquire("ws/1", scope=SCOPE, owner="old", ttl=30)
    assert old is not None
    await store.save("ws/1", {"by": "old"}, version=0, lease=old)
    clock.now += 31  # old's lease lapses; new takes over
    new = await store.try_acquire("ws/1", scope=SCOPE, owner="new")
    assert new is not None and new.token > old.token
    with pytest.raises(WorkspaceFenceError, match="taken over"):
        await store.renew(old)
    with pytest.raises(WorkspaceFenceError, match="taken over") as caught:
        await store.save("ws/1", {"by": "old again"}, version=1, lease=old)
    assert caught.value.code == "ERR_PRISM_WORKSPACE_FENCE"
    saved = await store.save("ws/1", {"by": "new"}, version=1, lease=new)
    assert (saved.version, saved.fence) == (2, new.token)
    loaded = await store.load("ws/1", scope=SCOPE)
    assert loaded is not None and loaded.data == {"by": "new"}


async def test_a_lapsed_lease_nobody_took_cannot_save(store: FencedStore, clock: Clock) -> None:
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="a", ttl=5)
    assert lease is not None
    renewed = await store.renew(lease, ttl=10)
    assert renewed.expires_at == clock.now + 10
    clock.now += 11
    with pytest.raises(WorkspaceFenceError, match="lapsed"):
        await store.save("ws/1", {"x": 1}, version=0, lease=lease)
    assert await store.load("ws/1", scope=SCOPE) is None


async def test_save_is_a_version_compare_and_set(store: FencedStore) -> None:
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="a")
    assert lease is not None
    await store.save("ws/1", {"n": 1}, version=0, lease=lease)
    with pytest.raises(WorkspaceFenceError, match="version 1, not 0"):
        await store.save("ws/1", {"n": "lost"}, version=0, lease=lease)
    loaded = await store.load("ws/1", scope=SCOPE)
    assert loaded is not None and (loaded.version, loaded.data) == (1, {"n": 1})


async def test_a_lease_saves_only_its_own_key(store: FencedStore) -> None:
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="a")
    assert lease is not None
    with pytest.raises(WorkspaceFenceError, match="not 'ws/2'"):
        await store.save("ws/2", {}, version=0, lease=lease)


async def test_another_scope_fails_closed(store: FencedStore) -> None:
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="a")
    assert lease is not None
    await store.save("ws/1", {"secret": "mine"}, version=0, lease=lease)
    await store.release(lease)
    with pytest.raises(WorkspaceOwnershipError) as caught:
        await store.try_acquire("ws/1", scope=OTHER, owner="b")
    assert caught.value.code == "ERR_PRISM_WORKSPACE_OWNERSHIP"
    assert "t1" not in str(caught.value)  # the owner is not revealed
    with pytest.raises(WorkspaceOwnershipError):
        await store.load("ws/1", scope=OTHER)
    assert await store.list(scope=OTHER) == []
    assert [c.key for c in await store.list(scope=SCOPE)] == ["ws/1"]


@pytest.mark.parametrize("ttl", [0, -1, 300.5, True, "30"])
async def test_ttl_is_positive_and_capped(store: FencedStore, ttl: object) -> None:
    with pytest.raises(WorkspaceConfigError, match="ttl"):
        await store.try_acquire("ws/1", scope=SCOPE, owner="a", ttl=ttl)  # type: ignore[arg-type]
    lease = await store.try_acquire("ws/1", scope=SCOPE, owner="a", ttl=300)
    assert lease is not None


@pytest.mark.parametrize("key", ["", "../x", "a b", "-x", "x" * 300])
async def test_bad_keys_are_refused(store: FencedStore, key: str) -> None:
    with pytest.raises(WorkspaceConfigError, match="key"):
        await store.try_acquire(key, scope=SCOPE, owner="a")
