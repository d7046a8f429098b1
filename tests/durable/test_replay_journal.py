"""The engine-neutral replay journal (``prism.durable.journal``), in one
process: deterministic ids, replays that append nothing twice and start
where the run started, the interrupted-call rule, divergence errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from durable_scenario import PLAN, SESSION, comparable, executions, make_agent

from prism.durable import ReplayDivergedError, ReplayJournal, run_journaled
from prism.errors import ConfigError, NoActiveRunError
from prism.stores.sqlite import SqliteSessionStore

pytestmark = pytest.mark.anyio


class Crash(BaseException):
    """Stands in for the process dying: nothing in the loop catches it."""


def _agent(tmp_path: Path, crash_on: int | None = None) -> Any:
    calls = {"n": 0}

    def on_tool(_name: str) -> None:
        calls["n"] += 1
        if calls["n"] == crash_on:
            raise Crash

    return make_agent(SqliteSessionStore(tmp_path / "s.sqlite"), tmp_path / "counts", on_tool)


async def _plain_run(tmp_path: Path) -> list[Any]:
    agent = make_agent(SqliteSessionStore(tmp_path / "plain.sqlite"), tmp_path / "plain-counts")
    session = agent.create_session(SESSION)
    await session.run("run the billing job")
    return comparable(await session.branch_entries())


def test_entry_ids_are_a_pure_function_of_run_and_position() -> None:
    first, again, other = ReplayJournal("run-a"), ReplayJournal("run-a"), ReplayJournal("run-b")
    ids = [first.entry_id() for _ in range(50)]
    assert ids == [again.entry_id() for _ in range(50)]
    assert len(set(ids)) == 50
    assert not set(ids) & {other.entry_id() for _ in range(50)}
    assert all(i.startswith("entry_") and len(i) == 26 for i in ids)
    with pytest.raises(ValueError, match="run id"):
        ReplayJournal("")


async def test_a_journaled_run_matches_a_plain_run(tmp_path: Path) -> None:
    session = _agent(tmp_path).create_session(SESSION)
    result = await run_journaled(session, "run the billing job", ReplayJournal("run-1"))
    assert result.run_id == "run-1"
    assert result.text == "all done"
    assert comparable(await session.branch_entries()) == await _plain_run(tmp_path)


async def test_replaying_a_finished_run_appends_nothing(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    first = await run_journaled(
        agent.create_session(SESSION), "run the billing job", ReplayJournal("run-1")
    )
    before = await agent.create_session(SESSION).entries()
    journal = ReplayJournal("run-1")
    again = await run_journaled(agent.create_session(SESSION), "run the billing job", journal)
    after = await agent.create_session(SESSION).entries()
    assert after == before
    assert journal.replayed_entries == len(before)
    assert again.text == first.text
    assert again.messages == first.messages
    assert again.leaf_id == first.leaf_id


async def test_a_replay_continues_a_crashed_run_once(tmp_path: Path) -> None:
    """The 3rd tool execution (``charge``, turn 3) crashes the process; the
    replay runs the earlier steps again (nothing records them here) but
    stores none of them twice, and answers the started ``charge``
    ``interrupted`` instead of charging again."""
    crashed = _agent(tmp_path, crash_on=3).create_session(SESSION)
    with pytest.raises(Crash):
        await run_journaled(crashed, "run the billing job", ReplayJournal("run-1"))

    session = _agent(tmp_path).create_session(SESSION)
    journal = ReplayJournal("run-1")
    result = await run_journaled(session, "run the billing job", journal)
    assert result.text == "all done"
    assert journal.replayed_entries > 0
    branch = await session.branch_entries()
    assert max(Counter(e["id"] for e in branch).values()) == 1
    messages = comparable(branch)
    plain = await _plain_run(tmp_path)
    assert len(messages) == len(plain)
    results = [m["content"][0] for m in messages if m["role"] == "tool"]
    interrupted = [
        r for r in results if isinstance(r["result"], dict) and r["result"]["code"] == "interrupted"
    ]
    assert [r["toolCallId"] for r in interrupted] == ["call_2_0"]
    assert executions(tmp_path / "counts")["call_2_0"] == 1  # charged once, never again


async def test_a_stored_entry_of_another_kind_is_a_divergence(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite")
    journal = ReplayJournal("run-1")
    await store.append_many(
        [
            {
                "id": journal.entry_id_at(1),
                "sessionId": SESSION,
                "parentId": None,
                "kind": "custom",
                "customType": "note",
                "data": None,
                "createdAt": "2026-01-01T00:00:00.000Z",
            }
        ]
    )
    session = make_agent(store, tmp_path / "counts").create_session(SESSION)
    with pytest.raises(ReplayDivergedError, match="'custom' entry where the run now appends"):
        await run_journaled(session, "run the billing job", journal)


async def test_a_journaled_run_takes_no_queued_input(tmp_path: Path) -> None:
    session = _agent(tmp_path).create_session(SESSION)
    refused: list[str] = []

    def on_event(event: Any) -> None:
        if event["type"] == "run_started":
            try:
                session.steer("and one more thing")
            except NoActiveRunError as error:
                refused.append(str(error))

    session.subscribe(on_event)
    await run_journaled(session, "run the billing job", ReplayJournal("run-1"))
    assert refused and "no active run" in refused[0]


async def test_a_journaled_run_is_always_durable(tmp_path: Path) -> None:
    session = _agent(tmp_path).create_session(SESSION)
    with pytest.raises(ConfigError, match="always durable"):
        await run_journaled(session, "run the billing job", ReplayJournal("run-1"), durable=False)
    assert await session.entries() == []
    await run_journaled(session, "run the billing job", ReplayJournal("run-1"))
    kinds = [e.get("customType") for e in await session.branch_entries()]
    assert "prism.checkpoint" in kinds


class FakeEngine:
    """What a replaying engine keeps between executions: each step's
    result by its ordinal (as DBOS keys steps by function id)."""

    def __init__(self) -> None:
        self.records: dict[int, tuple[str, Any]] = {}

    def journal(self, run_id: str) -> ReplayJournal:
        engine = self

        class Recording(ReplayJournal):
            ordinal = 0

            async def record(self, name: str, body: Any) -> Any:
                self.ordinal += 1
                kept = engine.records.get(self.ordinal)
                if kept is not None:
                    assert kept[0] == name  # the replay makes the same steps in order
                    return kept[1]
                value = await body()
                engine.records[self.ordinal] = (name, value)
                return value

        return Recording(run_id)


async def test_recorded_steps_are_not_redone_and_compaction_draws_ids_inside_its_step(
    tmp_path: Path,
) -> None:
    """With an engine that records steps, a replay of a crashed run asks
    neither the provider nor the summarizing strategy again, runs no
    recorded tool again, and the ids the strategy drew inside its step are
    skipped on replay, so every later entry is found where it was."""
    from durable_scenario import script

    from prism.compaction import CompactionResult
    from prism.providers import create_mock_provider

    summaries: list[str] = []
    requests: list[int] = []

    class CountingStrategy:
        name = "counting"

        async def compact(self, context: Any) -> CompactionResult:
            summaries.append(context.session_id)
            entry = context.compaction_entry("the billing job so far", {"strategy": "counting"})
            return CompactionResult(summary="the billing job so far", entries=[entry])

    def provider_script(request: Any) -> Any:
        requests.append(1)
        return script(request)

    def agent(crash_on: int | None) -> Any:
        calls = {"n": 0}

        def on_tool(_name: str) -> None:
            calls["n"] += 1
            if calls["n"] == crash_on:
                raise Crash

        return make_agent(
            SqliteSessionStore(tmp_path / "s.sqlite"),
            tmp_path / "counts",
            on_tool,
            create_mock_provider(provider_script),
            compaction={"strategy": CountingStrategy(), "threshold_entries": 1},
        )

    engine = FakeEngine()
    with pytest.raises(Crash):
        await run_journaled(
            agent(3).create_session(SESSION), "run the billing job", engine.journal("run-1")
        )
    assert summaries == [SESSION]
    asked_before_crash = len(requests)

    session = agent(None).create_session(SESSION)
    journal = engine.journal("run-1")
    result = await run_journaled(session, "run the billing job", journal)
    assert result.text == "all done"
    assert summaries == [SESSION]  # the summary was recorded, not asked again
    assert len(requests) == 6  # 3 recorded turns + the 3 after the crash
    assert asked_before_crash == 3
    branch = await session.branch_entries()
    assert [e["kind"] for e in branch].count("compaction") == 1
    assert max(Counter(e["id"] for e in branch).values()) == 1
    assert executions(tmp_path / "counts") == {
        f"call_{t}_{j}": 1 for t, calls in enumerate(PLAN) for j in range(len(calls))
    }


async def test_an_engines_checkpoints_name_it(tmp_path: Path) -> None:
    session = _agent(tmp_path).create_session(SESSION)
    await run_journaled(session, "run the billing job", ReplayJournal("run-1"))
    checkpoints = [
        e for e in await session.branch_entries() if e.get("customType") == "prism.checkpoint"
    ]
    assert checkpoints and all(c["data"]["engine"] == "replay" for c in checkpoints)


async def test_resume_refuses_a_run_an_engine_owns(tmp_path: Path) -> None:
    """A run killed under an engine (its last checkpoint not ``end``) is
    the engine's to recover: ``session.resume()`` says so and stores
    nothing, so no unrecorded step runs twice."""
    store = SqliteSessionStore(tmp_path / "s.sqlite")
    journal = ReplayJournal("run-1")
    killed = {"at": 0}

    class Killed(BaseException):
        pass

    class Dying(SqliteSessionStore):
        async def append_many(self, entries: Any) -> None:
            killed["at"] += 1
            if killed["at"] > 3:
                raise Killed  # the process is gone: nothing more is written
            await super().append_many(entries)
            if killed["at"] == 3:
                raise Killed  # as if SIGKILLed right after the 3rd write

    agent = make_agent(Dying(tmp_path / "s.sqlite"), tmp_path / "counts")
    with pytest.raises(Killed):
        await run_journaled(agent.create_session(SESSION), "run the billing job", journal)
    before = await store.list(SESSION)
    last = [e for e in before if e.get("customType") == "prism.checkpoint"][-1]["data"]
    assert last["phase"] != "end"

    session = make_agent(store, tmp_path / "counts").create_session(SESSION)
    with pytest.raises(ConfigError, match="belongs to 'replay'"):
        await session.resume()
    assert await store.list(SESSION) == before
    assert not session.is_running
