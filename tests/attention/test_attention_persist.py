"""Opt-in frontier persistence: a session that tripped the gate checkpoints
its sticky frontier as a custom entry, and a fresh agent on the same JSONL
file resumes with the same stubs on its first turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prism.attention import (
    FRONTIER_CUSTOM_TYPE,
    AttentionCompilerOptions,
    AttentionConfigError,
    create_attention_compiler,
    restore_attention_frontier,
)
from prism.branching import rebuild_session_context
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores import create_jsonl_session_store
from prism.tools import define_tool

pytestmark = pytest.mark.anyio
MODEL = {"provider": "mock", "model": "demo"}
BIG = "q" * 6000  # 1500 tokens per tool result
# The gate (0.75 * 8000) trips once four results are in the request; the
# overlay's 0.98 * 8000 would fit them all unshrunk.
OPTIONS = {"maxInputTokens": 8000, "keepLast": 1}
ROOMY_RUN = {"triggerRatio": 0.98, "compactRatio": 0.99}


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("done"), provider_done()]
    n = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"call_{n}", "fetch", {"n": n}), provider_done()]


def make(path: Path, *, persist: bool) -> tuple[Any, Any]:
    provider = create_mock_provider(script)
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[define_tool("fetch", lambda args, ctx: BIG)],
        attention_compiler={**OPTIONS, "persistFrontier": persist},
        store=create_jsonl_session_store(path),
    )
    return agent, provider


def checkpoints(entries: list[Any]) -> list[Any]:
    return [e for e in entries if e.get("customType") == FRONTIER_CUSTOM_TYPE]


async def tripped_session(path: Path, *, persist: bool) -> tuple[Any, Any]:
    agent, provider = make(path, persist=persist)
    session = agent.create_session(id="s1")
    for n in range(4):
        await session.run(f"task {n}")
    last = provider.requests[-1]["messages"]
    assert "omitted" in json.dumps(last)  # the gate tripped
    return session, last


async def test_reload_keeps_the_stubs_on_its_first_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, before = await tripped_session(path, persist=True)
    entries = await session.entries()
    stored = checkpoints(entries)
    assert len(stored) == 1  # one change of the key sets, one checkpoint
    assert stored[0]["kind"] == "custom"
    assert stored[0]["data"] == session.attention_sticky.to_json()
    # The checkpoint precedes the turn it shaped: the leaf stays a message.
    assert entries[-1]["kind"] == "message"

    # A new agent over the same file, as a new process would build it.
    agent, provider = make(path, persist=True)
    resumed = await agent.open_session("s1")
    await resumed.run("task 4", attention=ROOMY_RUN)
    first = provider.requests[0]["messages"]
    assert first[: len(before)] == before  # same stubs, same cached prefix
    assert resumed.attention_sticky.to_json() == session.attention_sticky.to_json()


async def test_without_persistence_the_reload_unstubs(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, before = await tripped_session(path, persist=False)
    assert checkpoints(await session.entries()) == []
    agent, provider = make(path, persist=False)
    resumed = await agent.open_session("s1")
    await resumed.run("task 4", attention=ROOMY_RUN)
    first = provider.requests[0]["messages"]
    assert first[: len(before)] != before
    assert "omitted" not in json.dumps(first)


async def test_checkpoints_are_not_messages_nor_summarized(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, _ = await tripped_session(path, persist=True)
    entries = await session.entries()
    context = rebuild_session_context(entries)
    assert all(m["role"] in ("user", "assistant", "tool") for m in context.messages)
    assert len(context.messages) == sum(1 for e in entries if e["kind"] == "message")
    assert FRONTIER_CUSTOM_TYPE not in json.dumps(await session.messages())
    compaction = await session.compact(keep_recent_entries=2)
    assert "toolCallIds" not in compaction["summary"]
    assert FRONTIER_CUSTOM_TYPE not in compaction["summary"]
    # Still restorable after compaction: the checkpoint stays on the branch.
    agent, _ = make(path, persist=True)
    resumed = await agent.open_session("s1")
    await resumed.run("task 4", attention=ROOMY_RUN)
    assert set(session.attention_sticky.tool_call_ids) <= set(
        resumed.attention_sticky.tool_call_ids
    )


async def test_malformed_newest_checkpoint_falls_back_never_fails(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, before = await tripped_session(path, persist=True)
    good = session.attention_sticky.to_json()
    leaf = session.leaf_id
    broken = [
        {"kind": "custom", "customType": FRONTIER_CUSTOM_TYPE, "data": "garbage"},
        {"kind": "custom", "customType": FRONTIER_CUSTOM_TYPE},
        {"kind": "custom", "customType": FRONTIER_CUSTOM_TYPE, "data": {"thinking": 7}},
    ]
    for n, extra in enumerate(broken):
        entry = {"id": f"bad{n}", "sessionId": "s1", "parentId": leaf, **extra}
        await session.store.append(entry)
        leaf = entry["id"]
    agent, provider = make(path, persist=True)
    resumed = await agent.open_session("s1")
    await resumed.run("task 4", attention=ROOMY_RUN)
    assert resumed.attention_sticky.to_json() == good
    assert provider.requests[0]["messages"][: len(before)] == before


def test_restore_drops_malformed_keys_one_by_one() -> None:
    entries = [
        {"kind": "custom", "customType": FRONTIER_CUSTOM_TYPE, "data": {"thinking": ["old"]}},
        {
            "kind": "custom",
            "customType": FRONTIER_CUSTOM_TYPE,
            "data": {"thinking": ["k", 3, "", None], "toolCallIds": ["a", {"x": 1}, "b"]},
        },
        {"kind": "custom", "customType": "someone.else", "data": {"thinking": ["no"]}},
        {"kind": "message", "message": {"role": "user", "content": "hi"}},
    ]
    frontier = restore_attention_frontier(entries)
    assert frontier is not None
    assert frontier.to_json() == {"thinking": ["k"], "toolCallIds": ["a", "b"]}
    assert frontier.pending_checkpoint() is None  # restored == stored
    assert restore_attention_frontier(entries[2:]) is None
    assert restore_attention_frontier([]) is None


def test_persist_option_is_validated_and_agent_only() -> None:
    assert AttentionCompilerOptions().persist_frontier is False
    opts = AttentionCompilerOptions.from_json({"persistFrontier": True})
    assert opts.persist_frontier and opts.to_json()["persistFrontier"] is True
    with pytest.raises(AttentionConfigError, match="persist_frontier must be a bool"):
        AttentionCompilerOptions(persist_frontier="yes")  # type: ignore[arg-type]
    compiler = create_attention_compiler({"maxInputTokens": 100, "persistFrontier": True})
    assert compiler.persist_frontier
    assert compiler.overlay({"persistFrontier": True}) is not None  # unchanged: fine
    with pytest.raises(AttentionConfigError, match="may not set persist_frontier"):
        compiler.overlay({"persistFrontier": False})
    off = create_attention_compiler({"maxInputTokens": 100})
    with pytest.raises(AttentionConfigError, match="may not set persist_frontier"):
        off.overlay({"persistFrontier": True})
