"""fork / clone / navigate / open_session on a shared store."""

from __future__ import annotations

import pytest
from runtime_helpers import make_agent, stored_roles

from prism.errors import ConfigError, UnknownNameError
from prism.providers import provider_done, provider_text_delta
from prism.stores import create_memory_session_store

pytestmark = pytest.mark.anyio


def reply(text: str) -> list[object]:
    return [provider_text_delta(text), provider_done()]


def texts(messages: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [m["content"][0]["text"] for m in messages]


async def test_navigate_branches_from_an_earlier_entry() -> None:
    agent = make_agent([reply("a1"), reply("a2"), reply("b2")])
    session = agent.create_session()
    await session.run("q1")
    first_answer = session.leaf_id
    await session.run("q2")
    assert first_answer is not None
    await session.navigate(first_answer)
    assert texts(await session.messages()) == ["q1", "a1"]
    await session.run("q2-alt")
    assert texts(await session.messages()) == ["q1", "a1", "q2-alt", "b2"]
    assert len(await session.entries()) == 6  # nothing rewritten or deleted
    with pytest.raises(UnknownNameError, match="unknown session entry id 'nope'"):
        await session.navigate("nope")


async def test_fork_copies_the_branch_into_a_new_session() -> None:
    store = create_memory_session_store()
    agent = make_agent([reply("a1"), reply("a2"), reply("f2")], store=store)
    session = agent.create_session("main")
    await session.run("q1")
    fork_point = session.leaf_id
    await session.run("q2")
    assert fork_point is not None
    forked = await session.fork(fork_point, id="forked")
    assert forked.id == "forked"
    assert texts(await forked.messages()) == ["q1", "a1"]
    copied = await forked.entries()
    original_ids = {e["id"] for e in await session.entries()}
    assert not original_ids & {e["id"] for e in copied}
    assert [e["parentId"] for e in copied] == [None, copied[0]["id"]]
    await forked.run("q2-fork")
    assert texts(await forked.messages()) == ["q1", "a1", "q2-fork", "f2"]
    assert texts(await session.messages()) == ["q1", "a1", "q2", "a2"]
    assert set(await store.list_sessions()) == {"main", "forked"}


async def test_clone_copies_current_branch_and_refuses_non_empty_target() -> None:
    agent = make_agent([reply("a1")])
    session = agent.create_session("main")
    await session.run("q1")
    clone = await session.clone()
    assert clone.id != session.id
    assert await clone.messages() == await session.messages()
    assert clone.leaf_id is not None and clone.leaf_id != session.leaf_id
    with pytest.raises(ConfigError, match="already has entries"):
        await session.clone(id="main")
    assert len(await session.entries()) == 2


async def test_open_session_resumes_from_the_store() -> None:
    store = create_memory_session_store()
    agent = make_agent([reply("a1"), reply("a2")], store=store)
    await agent.create_session("s1").run("q1")
    resumed = await agent.open_session("s1")
    assert texts(await resumed.messages()) == ["q1", "a1"]
    await resumed.run("q2")
    assert await stored_roles(resumed) == ["user", "assistant", "user", "assistant"]


async def test_sessions_of_one_agent_share_its_default_store() -> None:
    agent = make_agent([reply("a1")])
    first = agent.create_session("one")
    await first.run("q")
    assert first.store is agent.create_session("two").store
    with pytest.raises(ConfigError, match="session id must be a non-empty string"):
        agent.create_session(" ")


async def test_add_label_validates_and_writes_nothing_on_error() -> None:
    from prism.branching import labels

    session = make_agent([reply("a1")]).create_session()
    await session.run("q1")
    with pytest.raises(ConfigError, match="label must be a non-empty string"):
        await session.add_label("")
    with pytest.raises(UnknownNameError, match="unknown session entry id 'ghost'"):
        await session.add_label("x", target_id="ghost")
    assert len(await session.entries()) == 2
    target = session.leaf_id
    entry = await session.add_label("good answer")
    assert entry["parentId"] == target and session.leaf_id == entry["id"]
    assert labels(await session.entries()) == {target: "good answer"}
    assert len(await session.messages()) == 2  # labels are not provider messages


async def test_session_start_and_shutdown_middleware() -> None:
    from prism.middleware import create_middleware_registry

    seen: list[tuple[str, str]] = []
    middleware = create_middleware_registry()
    middleware.use("session_start", lambda v, n: seen.append(("start", v["sessionId"])) or v)
    middleware.use("session_shutdown", lambda v, n: seen.append(("stop", v["sessionId"])) or v)
    session = make_agent([reply("a1")], middleware=middleware).create_session("s1")
    await session.run("q")
    await session.state()
    await session.close()
    await session.close()
    assert seen == [("start", "s1"), ("stop", "s1")]
