"""session.compact() and the once-per-run auto-compaction check."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_helpers import kinds, make_agent, record

from prism.compaction import CompactionOptions, CompactionResult
from prism.errors import ConfigError
from prism.middleware import create_middleware_registry
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.runtime import create_agent

pytestmark = pytest.mark.anyio


def reply(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done()]


async def three_turns(session: Any) -> None:
    for n in range(3):
        await session.run(f"q{n}")


async def test_manual_compact_appends_one_entry_and_shrinks_context() -> None:
    agent = make_agent([reply("a0"), reply("a1"), reply("a2")])
    session = agent.create_session()
    await three_turns(session)
    events = record(session)
    before = len(await session.entries())
    entry = await session.compact(keep_recent_entries=2)
    assert kinds(events) == ["compaction_started", "compaction_finished"]
    assert events[0]["trigger"] == "manual"
    assert events[1]["entryId"] == entry["id"] == session.leaf_id
    assert entry["kind"] == "compaction"
    assert entry["data"]["trigger"] == "manual"
    assert len(entry["data"]["keepEntryIds"]) == 2
    entries = await session.entries()
    assert len(entries) == before + 1
    assert entry["parentId"] == entries[-2]["id"]
    messages = await session.messages()
    assert [m["content"][0]["text"] for m in messages] == ["q2", "a2"]
    assert (await session.state())["messageCount"] == 2


async def test_compaction_summary_reaches_the_next_request() -> None:
    provider = create_mock_provider([reply("a0"), reply("a1"), reply("a2"), reply("after")])
    session = make_agent(None, provider=provider).create_session()
    await three_turns(session)
    await session.compact(keep_recent_entries=0)
    await session.run("next")
    request = provider.requests[-1]["messages"]
    assert request[0]["role"] == "system" and "q0" in request[0]["content"][0]["text"]
    assert [m["role"] for m in request] == ["system", "user"]


async def test_compaction_middleware_can_edit_the_summary() -> None:
    middleware = create_middleware_registry()

    def tweak(payload: dict[str, Any], next_: Any) -> Any:
        result = payload["result"]
        return {**payload, "result": CompactionResult(summary="edited", entries=result.entries)}

    middleware.use("compaction", tweak)
    session = make_agent(
        [reply("a0"), reply("a1"), reply("a2")], middleware=middleware
    ).create_session()
    await three_turns(session)
    entry = await session.compact()
    assert entry["summary"] == "edited"


async def test_auto_compaction_runs_once_before_assembly() -> None:
    provider = create_mock_provider([reply("a0"), reply("a1"), reply("a2")])
    agent = make_agent(
        None,
        provider=provider,
        compaction=CompactionOptions(threshold_entries=3, keep_recent_entries=1),
    )
    session = agent.create_session()
    events = record(session)
    await session.run("q0")
    await session.run("q1")
    assert "compaction_started" not in kinds(events)
    await session.run("q2")  # branch: 5 entries incl. the new input > 3
    assert kinds(events).count("compaction_started") == 1
    started = next(e for e in events if e["type"] == "compaction_started")
    assert started["trigger"] == "auto" and "runId" in started
    assert [m["role"] for m in provider.requests[-1]["messages"]] == ["system", "user"]
    compaction = [e for e in await session.entries() if e["kind"] == "compaction"]
    assert len(compaction) == 1 and compaction[0]["data"]["trigger"] == "auto"


async def test_input_ratio_trigger_uses_the_runs_model_cap() -> None:
    small = {"provider": "mock", "model": "small", "limits": {"contextWindow": 1_200}}
    large = {"provider": "mock", "model": "large", "limits": {"contextWindow": 200_000}}
    agent = create_agent(
        model=small,
        provider=create_mock_provider([reply("a0"), reply("a1"), reply("a2")]),
        compaction={"trigger": {"type": "input_ratio", "ratio": 0.5}, "keepRecentEntries": 1},
    )
    session = agent.create_session()
    events = record(session)
    long_input = "word " * 200  # ~250 tokens: over half of the small model's 176-token cap
    await session.run(long_input, model=large)
    await session.run(long_input, model=large)
    assert "compaction_started" not in kinds(events)
    await session.run(long_input)  # the agent's small model: same history is over the ratio
    assert kinds(events).count("compaction_started") == 1


async def test_compaction_false_per_run_and_unknown_option() -> None:
    agent = make_agent(reply("a"), compaction={"thresholdEntries": 1})
    session = agent.create_session()
    events = record(session)
    await session.run("q0", compaction=False)
    await session.run("q1", compaction=False)
    assert "compaction_started" not in kinds(events)
    with pytest.raises(ConfigError, match="unknown compaction option"):
        await session.compact(keep_recent=1)
    assert not session.is_running


async def test_unknown_trigger_type_is_refused_before_anything_is_written() -> None:
    agent = make_agent(reply("a"))
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ConfigError, match="sometimes"):
        await session.run("q", compaction={"trigger": {"type": "sometimes"}})
    assert events == []
    assert await session.entries() == []
    with pytest.raises(ConfigError, match="sometimes"):
        make_agent(reply("a"), compaction={"trigger": {"type": "sometimes"}})


async def test_compact_on_an_empty_session_is_refused_and_appends_nothing() -> None:
    agent = make_agent([reply("never used")])
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ConfigError, match="nothing to compact"):
        await session.compact()
    assert await session.entries() == []
    assert events == []  # not even compaction_started
    assert not session.is_running  # the claim was released
    await session.add_label("only a label")
    with pytest.raises(ConfigError, match="nothing to compact"):
        await session.compact()
    assert [e["kind"] for e in await session.entries()] == ["label"]
