"""The fast compaction strategy end to end: a session on a small window
auto-compacts with the memory strategy, the provider then sees the rendered
memory plus the kept messages, raw history stays in the store, and a full
fold happens when the visible observations outgrow the pool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from om_scripts import ScriptedWorkers, call, done, entry_ids

from prism import create_agent
from prism.compaction import CompactionContext
from prism.errors import ConfigError
from prism.memory import (
    build_observational_memory_projection,
    create_observational_memory_compaction_strategy,
    create_observational_memory_runtime,
)
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.security import NOOP_REDACTOR, create_redactor

pytestmark = pytest.mark.anyio

SECRET = "sk-live-SECRET-0123456789abcdef"


def observe_each_entry(request: dict[str, Any]) -> list[Any]:
    ids = entry_ids(request)
    observations = [
        {"content": f"Fact {n} seen in {entry_id}.", "sourceEntryIds": [entry_id]}
        for n, entry_id in enumerate(ids)
    ]
    return call("record_observations", {"observations": observations})


async def test_auto_compaction_on_a_small_window_uses_prepared_memory() -> None:
    main = create_mock_provider([provider_text_delta("answer " * 20), provider_done()])
    strategy = create_observational_memory_compaction_strategy(keep_recent_entries=2)
    agent = create_agent(
        model={
            "provider": "mock",
            "model": "tiny",
            "limits": {"contextWindow": 2448, "maxOutputTokens": 1024},
        },
        provider=main,
        compaction={"strategy": strategy, "trigger": {"type": "input_ratio", "ratio": 0.5}},
    )
    session = agent.create_session(id="small")
    scripted = ScriptedWorkers(observer=[observe_each_entry, done()] * 10)
    memory = create_observational_memory_runtime(
        session=session,
        worker_provider=scripted.provider,
        worker_model={"provider": "mock", "model": "w"},
        redactor=NOOP_REDACTOR,
    )
    compactions: list[Any] = []
    session.subscribe(
        lambda e: compactions.append(e) if e["type"] == "compaction_finished" else None
    )
    for turn in range(6):
        await session.run(f"message number {turn} " + "words " * 30)
        assert (await memory.flush()).ok
    assert compactions, "the small window never triggered compaction"
    branch = await session.branch_entries()
    latest = [e for e in branch if e["kind"] == "compaction"][-1]
    assert latest["data"]["strategy"] == "observational-memory"
    assert latest["data"]["memory"]["type"] == "om.folded"
    assert "Observations (source-backed memory):" in latest["summary"]
    # The provider's last request: the memory summary plus recent raw messages only.
    request = json.dumps(main.requests[-1]["messages"])
    assert "Fact 0 seen in" in request
    assert "message number 0" not in request
    assert "message number 5" in request
    # Raw history is all still stored.
    stored = json.dumps(await session.entries())
    assert all(f"message number {n}" in stored for n in range(6))
    assert len(scripted.requests["observer"]) >= 6


async def test_a_full_fold_when_visible_observations_exceed_the_pool() -> None:
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(8):
        message = {
            "id": f"m{i}",
            "sessionId": "s",
            "parentId": parent,
            "kind": "message",
            "message": {"role": "user", "content": [{"type": "text", "text": f"m{i}"}]},
        }
        record = {
            "id": f"r{i}",
            "sessionId": "s",
            "parentId": f"m{i}",
            "kind": "custom",
            "customType": "om.observations.recorded",
            "data": {
                "type": "om.observations.recorded",
                "observations": [
                    {"id": f"{i:012x}", "content": "x" * 40, "sourceEntryIds": [f"m{i}"]}
                ],
            },
        }
        entries += [message, record]
        parent = f"r{i}"
    strategy = create_observational_memory_compaction_strategy(
        keep_recent_entries=1,
        overrides={"observationsPoolMaxTokens": 50, "observationsPoolTargetTokens": 30},
    )
    result = await strategy.compact(
        CompactionContext(session_id="s", entries=entries, redactor=NOOP_REDACTOR)
    )
    (entry,) = result.entries
    memory = entry["data"]["memory"]
    assert memory["fullFold"] is True
    # 8 x 10 tokens > 50: keep the newest 3 (30 tokens), fold the oldest 5 away.
    assert [o["id"] for o in memory["observations"]] == [f"{i:012x}" for i in (5, 6, 7)]
    assert memory["droppedObservationIds"] == [f"{i:012x}" for i in range(5)]
    assert entry["data"]["keepEntryIds"] == ["m7"]
    assert entry["data"]["throughEntryId"] == "r6"
    # Compacting the folded branch again keeps the fold; nothing new is hidden.
    again = await strategy.compact(
        CompactionContext(
            session_id="s", entries=[*entries, entry], trigger="auto", redactor=NOOP_REDACTOR
        )
    )
    assert again.entries[0]["data"]["memory"]["fullFold"] is False
    assert again.entries[0]["data"]["trigger"] == "auto"
    projection = build_observational_memory_projection([*entries, entry], "folded")
    assert projection.hidden_observation_ids == memory["droppedObservationIds"]


async def test_without_memory_the_strategy_falls_back_to_the_transcript_summary() -> None:
    entries = [
        {
            "id": f"m{i}",
            "sessionId": "s",
            "parentId": f"m{i - 1}" if i else None,
            "kind": "message",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": f"hello {i} {SECRET}"}],
            },
        }
        for i in range(4)
    ]
    strategy = create_observational_memory_compaction_strategy(keep_recent_entries=1)
    result = await strategy.compact(
        CompactionContext(session_id="s", entries=entries, redactor=create_redactor([SECRET]))
    )
    assert "user: hello 0" in result.summary
    assert SECRET not in json.dumps(result.entries)
    assert result.entries[0]["data"]["memory"]["observations"] == []


def test_strategy_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="keep_recent_entries"):
        create_observational_memory_compaction_strategy(keep_recent_entries=-1)
    with pytest.raises(ConfigError, match="name"):
        create_observational_memory_compaction_strategy(name="")
