"""The worker runtime against a scripted mock provider: observe, reflect,
drop, a worker that runs out of turns, a provider error, a worker citing an
entry that does not exist, one pipeline at a time, credentials, secrets."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from om_scripts import (
    ScriptedWorkers,
    bracket_ids,
    call,
    done,
    entry_ids,
    last_tool_result,
)

from prism import create_agent
from prism.errors import ConfigError, SettingsError
from prism.memory import (
    build_observational_memory_projection,
    create_observational_memory_runtime,
    fold_observational_memory_ledger,
)
from prism.providers import create_mock_provider, provider_done, provider_error, provider_text_delta
from prism.security import NOOP_REDACTOR, create_redactor, env_credential
from prism.stores import create_memory_session_store

pytestmark = pytest.mark.anyio

SECRET = "sk-live-SECRET-0123456789abcdef"
WORKER_MODEL = {"provider": "mock", "model": "memory-worker"}


async def chat(*prompts: str) -> Any:
    agent = create_agent(
        model={"provider": "mock", "model": "main"},
        provider=create_mock_provider([provider_text_delta("noted"), provider_done()]),
    )
    session = agent.create_session(id="s1")
    for prompt in prompts:
        await session.run(prompt)
    return session


def runtime_for(session: Any, scripted: ScriptedWorkers, **options: Any) -> Any:
    options.setdefault("redactor", NOOP_REDACTOR)
    return create_observational_memory_runtime(
        session=session, worker_provider=scripted.provider, worker_model=WORKER_MODEL, **options
    )


def observe_first_entry(request: dict[str, Any]) -> list[Any]:
    ids = entry_ids(request)
    return call(
        "record_observations",
        {"observations": [{"content": "User likes green tea.", "sourceEntryIds": ids[:1]}]},
    )


def reflect_all(request: dict[str, Any]) -> list[Any]:
    ids = bracket_ids(request)
    return call(
        "record_reflections",
        {"reflections": [{"content": "A tea drinker.", "observationIds": ids}]},
    )


def memory_records(entries: list[Any]) -> list[Any]:
    return [e for e in entries if e["kind"] == "custom"]


async def test_flush_observes_then_reflects_with_cited_sources() -> None:
    session = await chat("I like green tea.", "What should I drink?")
    scripted = ScriptedWorkers(observer=[observe_first_entry], reflector=[reflect_all])
    runtime = runtime_for(session, scripted)
    report = await runtime.flush()
    assert report.ok and report.error is None
    assert [(w.worker, w.recorded, w.turns) for w in report.workers] == [
        ("observer", 1, 2),
        ("reflector", 1, 2),
    ]
    entries = await session.branch_entries()
    observed, reflected = memory_records(entries)
    assert observed["customType"] == observed["data"]["type"] == "om.observations.recorded"
    (observation,) = observed["data"]["observations"]
    assert observation["sourceEntryIds"] == [entries[0]["id"]]
    assert observed["data"]["coversUpToId"] == entries[3]["id"]  # the last message
    assert reflected["data"]["type"] == "om.reflections.recorded"
    assert reflected["data"]["reflections"][0]["observationIds"] == [observation["id"]]
    assert reflected["data"]["coversUpToId"] == observed["id"]
    # The observer saw only branch entries, each under its id.
    prompt = scripted.requests["observer"][0]
    assert entry_ids(prompt) == [e["id"] for e in entries[:4]]
    # Nothing new: a second flush runs no worker.
    again = await runtime.flush()
    assert again.workers == [] and again.skipped == "no_work"
    assert runtime.status()["lastRun"]["skipped"] == "no_work"


async def test_dropper_prunes_when_the_pool_is_over_target() -> None:
    session = await chat("I like green tea.")
    scripted = ScriptedWorkers(
        observer=[observe_first_entry],
        dropper=[
            lambda request: call("drop_observations", {"observationIds": bracket_ids(request)})
        ],
    )
    runtime = runtime_for(
        session,
        scripted,
        overrides={"observationsPoolMaxTokens": 1, "observationsPoolTargetTokens": 1},
    )
    report = await runtime.flush()
    assert [w.worker for w in report.workers] == ["observer", "reflector", "dropper"]
    entries = await session.branch_entries()
    dropped = memory_records(entries)[-1]
    assert dropped["data"]["type"] == "om.observations.dropped"
    ledger = fold_observational_memory_ledger(entries)
    assert list(ledger.dropped) == list(ledger.observations)
    assert build_observational_memory_projection(entries).observations == []


async def test_a_worker_that_exceeds_agent_max_turns_appends_nothing() -> None:
    session = await chat("I like green tea.")
    before = await session.entries()
    scripted = ScriptedWorkers(observer=[observe_first_entry] * 10)
    runtime = runtime_for(session, scripted, overrides={"agentMaxTurns": 3})
    report = await runtime.flush()
    assert not report.ok
    assert report.error is not None and report.error["code"] == "max_tool_rounds"
    assert "observer worker failed" in report.error["message"]
    assert len(scripted.requests["observer"]) == 3  # never a fourth provider turn
    assert "reflector" not in scripted.requests  # the pipeline stopped
    assert await session.entries() == before
    status = runtime.status()
    assert status["inFlight"] is False
    assert status["lastError"]["code"] == "max_tool_rounds"
    # The session is intact and keeps working.
    await session.run("still here?")
    assert len(await session.entries()) == len(before) + 2


async def test_a_worker_whose_provider_errors_appends_nothing_and_is_reported() -> None:
    session = await chat("I like green tea.")
    before = await session.entries()
    scripted = ScriptedWorkers(observer=[[provider_error("upstream exploded", "server_error")]])
    runtime = runtime_for(session, scripted)
    report = await runtime.flush()
    assert report.error is not None
    assert "upstream exploded" in report.error["message"]
    assert report.error["details"] == {"worker": "observer"}
    assert await session.entries() == before
    assert runtime.last_error == report.error
    # The next flush succeeds and clears the error.
    assert (await runtime.flush()).ok
    assert runtime.last_error is None


async def test_a_worker_citing_a_missing_entry_is_refused() -> None:
    session = await chat("I like green tea.")
    seen: list[Any] = []

    def after_refusal(request: dict[str, Any]) -> list[Any]:
        seen.append(last_tool_result(request))
        return done()

    scripted = ScriptedWorkers(
        observer=[
            call(
                "record_observations",
                {"observations": [{"content": "made up", "sourceEntryIds": ["entry_nope"]}]},
            ),
            after_refusal,
        ]
    )
    runtime = runtime_for(session, scripted)
    report = await runtime.flush()
    assert report.ok
    (result,) = seen
    assert result["isError"] is True
    assert "'entry_nope' is not entries on this branch" in json.dumps(result["result"])
    entries = await session.branch_entries()
    (marker,) = memory_records(entries)
    # Nothing recorded, but the span is covered so it is not observed again.
    assert marker["data"]["observations"] == []
    assert marker["data"]["coversUpToId"] == entries[1]["id"]


async def test_one_pipeline_at_a_time() -> None:
    session = await chat("I like green tea.")
    active = 0
    peak = 0
    gate_reports: list[Any] = []
    runtime: Any = None

    async def slow_observer(request: Any) -> list[Any]:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        assert runtime.in_flight and runtime.status()["inFlight"] is True
        gate_reports.append(await runtime.after_run())
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        active -= 1
        return [provider_text_delta("done"), provider_done()]

    runtime = create_observational_memory_runtime(
        session=session,
        worker_provider=create_mock_provider(slow_observer),
        worker_model=WORKER_MODEL,
        redactor=NOOP_REDACTOR,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(runtime.flush)
        group.start_soon(runtime.flush)
    assert peak == 1
    assert [r.skipped for r in gate_reports] == ["in_flight"]
    assert runtime.in_flight is False


async def test_a_missing_credential_skips_the_workers() -> None:
    session = await chat("I like green tea.")
    scripted = ScriptedWorkers(observer=[observe_first_entry])
    runtime = runtime_for(session, scripted, credential=env_credential({}, "OM_WORKER_KEY"))
    report = await runtime.flush()
    assert report.skipped == "missing_credential" and report.workers == []
    assert scripted.provider.turns == 0
    assert memory_records(await session.entries()) == []


async def test_a_resolved_credential_builds_the_provider_and_is_redacted() -> None:
    session = await chat(f"My key is {SECRET}, remember it.")
    scripted = ScriptedWorkers(
        observer=[
            lambda request: call(
                "record_observations",
                {
                    "observations": [
                        {"content": f"key is {SECRET}", "sourceEntryIds": entry_ids(request)[:1]}
                    ]
                },
            )
        ]
    )
    built: list[str] = []

    def factory(value: str) -> Any:
        built.append(value)
        return scripted.provider

    runtime = create_observational_memory_runtime(
        session=session,
        worker_provider=factory,
        worker_model=WORKER_MODEL,
        credential=env_credential({"OM_WORKER_KEY": SECRET}, "OM_WORKER_KEY"),
        redactor=NOOP_REDACTOR,
    )
    report = await runtime.flush()
    assert report.ok and built == [SECRET]
    assert SECRET not in scripted.all_requests_text()
    records = memory_records(await session.entries())
    assert SECRET not in json.dumps(records)
    assert "key is [REDACTED]" in json.dumps(records)


async def test_secrets_never_reach_prompts_records_errors_or_status() -> None:
    session = await chat(f"The token is {SECRET}.")
    scripted = ScriptedWorkers(
        observer=[
            lambda request: call(
                "record_observations",
                {
                    "observations": [
                        {"content": f"token {SECRET}", "sourceEntryIds": entry_ids(request)[:1]}
                    ]
                },
            )
        ],
        reflector=[[provider_error(f"bad key {SECRET}", "auth")]],
    )
    runtime = runtime_for(
        session, scripted, redactor=create_redactor([SECRET]), overrides={"debugLog": True}
    )
    report = await runtime.flush()
    assert report.error is not None
    assert SECRET not in scripted.all_requests_text()
    assert SECRET not in json.dumps(memory_records(await session.entries()))
    status = json.dumps(runtime.status())
    assert SECRET not in status and "[REDACTED]" in status
    assert runtime.status()["debugLog"]  # the debug log is on and redacted too
    assert SECRET not in json.dumps(report.to_json())


async def test_the_post_run_gate_follows_thresholds_passive_and_compacts() -> None:
    session = await chat("I like green tea.")
    scripted = ScriptedWorkers(observer=[observe_first_entry])
    quiet = runtime_for(session, scripted)
    assert (await quiet.after_run()).skipped == "no_work"  # far below observeAfterTokens
    passive = runtime_for(session, scripted, overrides={"passive": True, "observeAfterTokens": 1})
    assert (await passive.after_run()).skipped == "passive"
    assert scripted.provider.turns == 0
    eager = runtime_for(
        session,
        scripted,
        overrides={"observeAfterTokens": 1, "compactAfterTokens": 1},
        keep_recent_entries=1,
    )
    report = await eager.after_run()
    assert [w.worker for w in report.workers] == ["observer"]  # reflector under threshold
    assert report.compaction_entry_id is not None
    entries = await session.branch_entries()
    compaction = entries[-1]
    assert compaction["kind"] == "compaction"
    assert compaction["data"]["strategy"] == "observational-memory"
    assert "User likes green tea." in compaction["summary"]
    assert compaction["data"]["memory"]["type"] == "om.folded"


async def test_settings_are_read_from_the_settings_key_at_each_flush() -> None:
    session = await chat("I like green tea.")
    scripted = ScriptedWorkers(observer=[observe_first_entry] * 10)
    live: dict[str, Any] = {"observational-memory": {"agentMaxTurns": 2}}
    runtime = runtime_for(session, scripted, settings=live)
    assert runtime.settings().agent_max_turns == 2
    live["observational-memory"] = {"agentMaxTurns": "x"}
    with pytest.raises(SettingsError, match="agentMaxTurns"):
        await runtime.flush()
    assert scripted.provider.turns == 0


async def test_construction_refuses_bad_wiring() -> None:
    session = await chat()
    scripted = ScriptedWorkers()
    with pytest.raises(ConfigError, match="store must be the session's own store"):
        runtime_for(session, scripted, store=create_memory_session_store())
    with pytest.raises(ConfigError, match="worker_provider"):
        create_observational_memory_runtime(
            session=session,
            worker_provider=object(),
            worker_model=WORKER_MODEL,
            redactor=NOOP_REDACTOR,
        )
    with pytest.raises(ConfigError, match="worker_model"):
        create_observational_memory_runtime(
            session=session,
            worker_provider=scripted.provider,
            worker_model={"model": "x"},
            redactor=NOOP_REDACTOR,
        )
    with pytest.raises(ConfigError, match="no branch_entries"):
        create_observational_memory_runtime(
            session=object(),
            worker_provider=scripted.provider,
            worker_model=WORKER_MODEL,
            redactor=NOOP_REDACTOR,
        )
    with pytest.raises(SettingsError):
        runtime_for(session, scripted, overrides={"nope": 1})
    assert runtime_for(session, scripted, store=session.store) is not None


async def test_a_long_backlog_is_observed_in_chunks_and_summaries_are_not_reread() -> None:
    session = await chat(*[f"fact number {i} " + "detail " * 2000 for i in range(12)])
    await session.compact(keep_recent_entries=2)  # a compaction entry in the middle
    await session.run("after the compaction")
    scripted = ScriptedWorkers()
    runtime = runtime_for(session, scripted)
    report = await runtime.flush()
    assert report.ok
    chunks = [w for w in report.workers if w.worker == "observer"]
    assert len(chunks) > 1  # 12 x ~3,500 tokens do not fit one 20,000-token prompt
    prompts = [bracket_ids(r, r"\[(entry_[a-z0-9]+)\]") for r in scripted.requests["observer"]]
    seen = [entry_id for ids in prompts for entry_id in ids]
    entries = await session.branch_entries()
    readable = [e["id"] for e in entries if e["kind"] == "message"]
    assert seen == readable  # every message exactly once, in order, no compaction summary
    markers = [e["data"]["coversUpToId"] for e in memory_records(entries)]
    assert markers[-1] == readable[-1]
    assert (await runtime.flush()).skipped == "no_work"
