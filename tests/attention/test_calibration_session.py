"""The token calibration persists with the session: a second process that
opens the session starts calibrated (no file; SQLite, PostgreSQL), a record is written only when
the fit moved, a durable run carries it in its checkpoints, a fork inherits
the record at its fork point, a replayed turn is learned once, attach() with
the agent option is refused, and a damaged record is reported while the run
goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import prism
from prism.attention import CALIBRATION_ENTRY, TokenCalibration, split_request_tokens
from prism.attention.calibration_entry import calibration_rows, record_of_entry
from prism.durable import ReplayJournal, run_journaled
from prism.errors import ConfigError
from prism.providers import create_mock_provider, provider_done, provider_text_delta, provider_usage
from prism.runtime import create_agent
from prism.stores.memory import MemorySessionStore
from prism.stores.postgres import create_postgres_session_store
from prism.stores.sqlite import SqliteSessionStore

CHILD = Path(__file__).with_name("calibration_child.py")
PYTHON_DIR = str(Path(prism.__file__).resolve().parents[1])
MODEL = {"provider": "mock", "model": "m", "limits": {"contextWindow": 400000}}
PROSE = "a few words of prose " * 30


def _billing(factor: float) -> Any:
    def script(request: dict[str, Any]) -> list[Any]:
        reported = round(split_request_tokens(request).total * factor)
        return [
            provider_text_delta("ok"),
            provider_usage(input_tokens=reported, output_tokens=1),
            provider_done("stop"),
        ]

    return create_mock_provider(script)


def _agent(store: Any, calibration: TokenCalibration | None = None, **options: Any) -> Any:
    return create_agent(
        model=MODEL,
        provider=_billing(2.0),
        store=store,
        token_calibration=calibration or TokenCalibration(),
        **options,
    )


def _events(session: Any, kind: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.subscribe(lambda e: seen.append(e) if e["type"] == kind else None)
    return seen


def _child(store: Path, turns: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(store), "s1", str(turns)],
        env={**os.environ, "PYTHONPATH": PYTHON_DIR},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_a_second_process_resumes_the_session_calibrated(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    first = [e for e in _child(store, 3) if e["type"] == "tokens_calibrated"]
    # The first process starts from chars/4: its first estimate is half the bill.
    assert first[0]["calibratedTokens"] == first[0]["estimatedTokens"]
    resumed = _child(store, 1)
    learned = [e for e in resumed if e["type"] == "tokens_calibrated"]
    assert len(learned) == 1 and learned[0]["turns"] >= 2  # continues the count
    error = abs(learned[0]["calibratedTokens"] - learned[0]["reportedTokens"])
    assert error <= 0.05 * learned[0]["reportedTokens"]


@pytest.mark.anyio
async def test_a_record_is_written_only_when_the_fit_moved() -> None:
    store = MemorySessionStore()
    session = _agent(store).create_session("s")
    for _ in range(12):
        await session.run(PROSE)
    records = [e for e in await session.entries() if record_of_entry(e) is not None]
    assert 1 <= len(records) < 12
    assert all(e["customType"] == CALIBRATION_ENTRY for e in records)
    # The newest record is the session's state, with the figures the inspector shows.
    (row,) = calibration_rows(await session.branch_entries())
    assert row["model"] == "mock/m" and 1.8 < row["scale"] < 2.2
    assert abs(row["lastError"]) < 0.05 and row["turns"] >= 1


@pytest.mark.anyio
async def test_a_durable_run_carries_the_record_in_its_checkpoint(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite")
    session = _agent(store, durable=True).create_session("s")
    await session.run(PROSE)
    entries = await session.entries()
    assert not [e for e in entries if e.get("customType") == CALIBRATION_ENTRY]
    carried = [e for e in entries if record_of_entry(e) is not None]
    assert carried and all(e["customType"] == "prism.checkpoint" for e in carried)
    fresh = TokenCalibration()
    again = _agent(SqliteSessionStore(tmp_path / "s.sqlite"), fresh).create_session("s")
    events = _events(again, "tokens_calibrated")
    await again.run(PROSE)
    assert events[0]["turns"] == 2
    assert abs(events[0]["calibratedTokens"] - events[0]["reportedTokens"]) <= (
        0.05 * events[0]["reportedTokens"]
    )


@pytest.mark.anyio
async def test_a_fork_inherits_the_record_at_its_fork_point() -> None:
    store = MemorySessionStore()
    session = _agent(store).create_session("s")
    await session.run(PROSE)
    fork_point = session.leaf_id
    for _ in range(3):
        await session.run(PROSE)
    assert calibration_rows(await session.branch_entries())[0]["turns"] > 1
    forked = await session.fork(fork_point, id="f")
    (row,) = calibration_rows(await forked.branch_entries())
    assert row["turns"] == 1
    # A new process opening the fork starts from the fork point's fit.
    reopened = _agent(store).create_session("f")
    events = _events(reopened, "tokens_calibrated")
    await reopened.run(PROSE)
    assert events[0]["turns"] == 2


class RecordingJournal(ReplayJournal):
    """A journal that keeps each step's result, as an engine like DBOS does."""

    def __init__(self, run_id: str, kept: dict[str, Any]) -> None:
        super().__init__(run_id)
        self.kept = kept
        self.position = 0

    async def record(self, name: str, body: Any) -> dict[str, Any]:
        self.position += 1
        key = f"{name}:{self.position}"
        if key not in self.kept:
            self.kept[key] = await body()
        return self.kept[key]  # type: ignore[no-any-return]


@pytest.mark.anyio
async def test_a_replayed_turn_is_learned_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    calibration = TokenCalibration()
    agent = _agent(SqliteSessionStore(path), calibration)
    await run_journaled(agent.create_session("s"), PROSE, ReplayJournal("run-1"))
    assert calibration.snapshot("mock/m")["turns"] == 1
    # A journal that runs the step again: the same (run, message) is not learned twice.
    again = agent.create_session("s")
    events = _events(again, "tokens_calibrated")
    await run_journaled(again, PROSE, ReplayJournal("run-1"))
    assert calibration.snapshot("mock/m")["turns"] == 1 and events == []

    # An engine that replays from its record, in a new process: nothing learned again.
    kept: dict[str, Any] = {}
    await run_journaled(agent.create_session("s"), PROSE, RecordingJournal("run-2", kept))
    assert calibration.snapshot("mock/m")["turns"] == 2
    fresh = TokenCalibration()
    other = _agent(SqliteSessionStore(path), fresh).create_session("s")
    replayed = _events(other, "tokens_calibrated")
    await run_journaled(other, PROSE, RecordingJournal("run-2", kept))
    assert replayed == [] and fresh.snapshot("mock/m")["turns"] == 1


@pytest.mark.anyio
async def test_attach_with_the_agent_option_is_refused() -> None:
    session = _agent(MemorySessionStore()).create_session("s1")
    with pytest.raises(ConfigError, match=r"'s1'.*token_calibration=.*twice"):
        await TokenCalibration().attach(session)


@pytest.mark.anyio
async def test_a_damaged_record_is_reported_and_the_run_goes_on() -> None:
    store = MemorySessionStore()
    writer = create_agent(model=MODEL, provider=_billing(2.0), store=store)
    session = writer.create_session("s")
    await session.run(PROSE)
    bad = await session.append_custom(CALIBRATION_ENTRY, {"version": 1, "models": {"mock/m": 7}})
    before = await session.entries()

    reader = _agent(store).create_session("s")
    warnings = _events(reader, "calibration_warning")
    learned = _events(reader, "tokens_calibrated")
    result = await reader.run(PROSE)
    assert result.text == "ok"
    (warning,) = warnings
    assert warning["entryId"] == bad["id"]
    assert "'s'" in warning["message"] and bad["id"] in warning["message"]
    assert "'mock/m'" in warning["message"]
    # Uncalibrated (chars/4) on its first turn; the damaged entry is kept as it was.
    assert learned[0]["calibratedTokens"] == learned[0]["estimatedTokens"]
    after = await reader.entries()
    assert after[: len(before)] == before
    # The run wrote a good record after it, so the next run restores cleanly.
    assert record_of_entry(after[-3]) is not None or any(
        record_of_entry(e) is not None for e in after[len(before) :]
    )
    warnings.clear()
    await reader.run(PROSE)
    assert warnings == []


@pytest.mark.anyio
async def test_a_postgres_session_is_reopened_calibrated(pg_dsn: str) -> None:
    async with create_postgres_session_store(pg_dsn) as store:
        session = _agent(store).create_session("s")
        for _ in range(3):
            await session.run(PROSE)
    async with create_postgres_session_store(pg_dsn) as store:
        reopened = _agent(store).create_session("s")
        events = _events(reopened, "tokens_calibrated")
        await reopened.run(PROSE)
    first = events[0]
    assert (
        abs(first["calibratedTokens"] - first["reportedTokens"]) <= 0.05 * first["reportedTokens"]
    )
