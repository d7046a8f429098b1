"""Branches: navigate back and branch, fork and clone into new sessions,
compact, and rebuild the provider context from raw entries."""

from __future__ import annotations

from typing import Any

import anyio

from prism import create_memory_session_store, create_mock_provider
from prism.branching import labels, list_leaves, rebuild_session_context
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent


def texts(messages: list[Any]) -> list[str]:
    return [m["content"][0]["text"] for m in messages]


async def main() -> None:
    store = create_memory_session_store()
    provider = create_mock_provider(
        lambda request: [
            provider_text_delta(f"re: {request['messages'][-1]['content'][0]['text']}"),
            provider_done(),
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"}, provider=provider, store=store
    )
    session = agent.create_session("main")

    await session.run("plan A")
    after_first = session.leaf_id
    await session.run("details of A")
    print("main:", texts(await session.messages()))

    # navigate(): move the leaf back; the next run starts a second branch
    assert after_first is not None
    await session.navigate(after_first)
    await session.run("plan B instead")
    print("main now:", texts(await session.messages()))
    entries = await session.entries()
    print("leaves:", len(list_leaves(entries)), "entries:", len(entries))

    # The raw entries hold both branches; rebuild either one
    other_leaf = list_leaves(entries)[0]["id"]
    print("other branch:", texts(rebuild_session_context(entries, other_leaf).messages))

    # add_label(): a label entry under the leaf that names its target
    await session.add_label("first plan", target_id=after_first)
    print("labels:", list(labels(await session.entries()).values()))

    # fork(): a new session with a copy of the branch up to an entry
    forked = await session.fork(after_first, id="fork")
    print("fork:", texts(await forked.messages()))
    clone = await session.clone(id="clone")
    print("clone:", texts(await clone.messages()))
    print("sessions:", await store.list_sessions())

    # compact(): one compaction entry; provider context becomes summary + recent
    await session.compact(keep_recent_entries=1)
    context = rebuild_session_context(await session.entries(), session.leaf_id)
    print("after compaction:", texts(context.messages), "summaries:", len(context.summaries))


if __name__ == "__main__":
    anyio.run(main)
