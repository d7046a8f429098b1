"""``Agent.subscribe``: one listener for every session an agent creates."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_helpers import make_agent

from prism.providers import provider_done, provider_text_delta

pytestmark = pytest.mark.anyio

REPLY = [provider_text_delta("ok"), provider_done()]


async def test_agent_listener_sees_every_new_session_until_unsubscribed() -> None:
    agent = make_agent([REPLY, REPLY, REPLY])
    before = agent.create_session("before")
    seen: list[tuple[str, str]] = []
    unsubscribe = agent.subscribe(lambda e: seen.append((e["sessionId"], e["type"])))
    first = agent.create_session("first")
    second = await agent.open_session("second")
    await before.run("a")
    await first.run("b")
    await second.run("c")
    sessions = {sid for sid, _ in seen}
    assert sessions == {"first", "second"}
    assert ("first", "run_finished") in seen and ("second", "run_finished") in seen
    unsubscribe()
    seen.clear()
    assert agent.create_session("later") is not None
    assert seen == []


def test_agent_subscribe_refuses_a_non_callable() -> None:
    agent = make_agent(REPLY)
    with pytest.raises(TypeError, match="callable"):
        agent.subscribe("nope")  # type: ignore[arg-type]


async def test_unsubscribe_reaches_sessions_created_before_it() -> None:
    agent = make_agent([REPLY, REPLY])
    seen: list[Any] = []
    unsubscribe = agent.subscribe(seen.append)
    session = agent.create_session("s")
    await session.run("one")
    count = len(seen)
    unsubscribe()
    await session.run("two")
    assert len(seen) == count and count > 0
