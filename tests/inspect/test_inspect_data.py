"""What the inspector computes from a store: costs (against the attention
benchmark's scorer), the timeline, the tree, memory, checkpoints, replay,
and the sources it refuses."""

from __future__ import annotations

import hashlib
import socket
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.inspect.conftest import DemoFile
from tests.inspect.demo_sessions import build_calibrated_session
from tests.pg_server import PgServer

from prism._bench.attention.scenario import VariantResult, score
from prism.attention import CALIBRATION_ENTRY
from prism.inspect import (
    InspectError,
    SessionView,
    find_runs,
    fold_timeline,
    open_source,
    render_report,
    replay_run,
)
from prism.security import NOOP_REDACTOR
from prism.stores import create_jsonl_session_store, create_sqlite_session_store

pytestmark = pytest.mark.anyio


async def view_of(path: Path, session: str) -> SessionView:
    source = await open_source(str(path))
    return SessionView(session, await source.entries(session))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_costs_equal_the_attention_benchmark_for_the_same_session(demo: DemoFile) -> None:
    benchmark = VariantResult("plain")
    score(benchmark, demo.plain_requests)
    expected = benchmark.to_json()
    view = await view_of(demo.path, "plain")
    totals = view.costs.totals()
    for key in (
        "requests",
        "totalInputTokens",
        "peakInputTokens",
        "cacheBusts",
        "cacheReadTokens",
        "cacheWriteTokens",
        "cacheAwareCost",
    ):
        assert totals[key] == expected[key], key
    assert [t.input_tokens for t in view.costs.turns] == expected["perRequestInputTokens"]
    assert [t.turn - 1 for t in view.costs.turns if t.bust] == expected["bustTurns"] == [3]


async def test_the_timeline_folds_entries_into_steps(demo: DemoFile) -> None:
    view = await view_of(demo.path, "trip-planning")
    steps = view.timeline_steps()
    kinds = {step["kind"] for step in steps}
    assert {
        "input",
        "turn",
        "tool",
        "compaction",
        "memory",
        "attention",
        "checkpoint",
        "model",
    } <= kinds
    tools = {step["title"]: step for step in steps if step["kind"] == "tool"}
    assert tools["book_hotel"]["status"] == "error"
    assert tools["search_flights"]["status"] == "ok"
    assert tools["search_flights"]["checkpointed"] is True
    for step in steps:
        if step["kind"] in ("turn", "tool"):
            assert step["durationMs"] is not None and step["durationMs"] >= 0
    page = view.timeline_page(None, 5)
    assert page["total"] == len(steps) and len(page["steps"]) == 5
    assert page["steps"][-1] == steps[-1]


async def test_the_tree_shows_forks_labels_compactions_and_counts_the_rest(demo: DemoFile) -> None:
    view = await view_of(demo.path, "trip-planning")
    tree = view.tree()
    nodes = tree["nodes"]
    assert sum(n["hidden"] for n in nodes) + len(nodes) == len(view.entries)
    assert [n["children"] for n in nodes if n["children"] > 1] == [2]
    assert any(n["label"] == "plan-v1" for n in nodes)
    assert sum(n["kind"] == "compaction" for n in nodes) == 1
    leaves = [n for n in nodes if n["leaf"]]
    assert len(leaves) == 2 and sum(n["onBranch"] for n in leaves) == 1


async def test_messages_come_by_page_and_around_an_entry(demo: DemoFile) -> None:
    view = await view_of(demo.path, "trip-planning")
    total = len(view.branch)
    last = view.messages(None, 10)
    assert last["total"] == total and last["offset"] == total - 10
    assert last["entries"][-1] is view.branch[-1]
    around = view.messages(None, 10, around=demo.ids["first_user"])
    assert around["offset"] == 0 and around["entries"][0]["id"] == demo.ids["first_user"]


async def test_memory_records_link_their_source_entries(demo: DemoFile) -> None:
    view = await view_of(demo.path, "trip-planning")
    [record] = view.memory()["records"]
    assert record["content"] == "Budget is 2000 EUR."
    assert record["sources"] == [demo.ids["first_user"]]
    assert record["missingSources"] == []


async def test_checkpoints_group_by_run_with_their_state(demo: DemoFile) -> None:
    view = await view_of(demo.path, "trip-planning")
    runs = view.checkpoints()["runs"]
    assert len(runs) == 4
    assert {run["state"] for run in runs} == {"completed"}
    assert runs[0]["checkpoints"][0]["phase"] == "input"


async def test_replay_plays_the_stored_turns_without_touching_anything(demo: DemoFile) -> None:
    before = digest(demo.path)
    view = await view_of(demo.path, "trip-planning")
    runs = find_runs(view.branch)
    assert len(runs) == 4 and all(run.durable for run in runs)
    events = [event async for event in replay_run(view.branch, runs[-1])]
    assert [e["type"] for e in events] == [
        "run_started",
        "message_started",
        "message_finished",
        "tool_call",
        "tool_result",
        "message_started",
        "message_delta",
        "message_finished",
        "run_finished",
    ]
    result = next(e for e in events if e["type"] == "tool_result")["result"]
    assert result["name"] == "book_hotel" and result["isError"] is True
    stored = next(
        block
        for entry in view.branch[runs[-1].start :]
        if entry["kind"] == "message" and entry["message"]["role"] == "tool"
        for block in entry["message"]["content"]
    )
    assert result["value"] == stored["result"]  # the stored error, not a re-wrapped one
    assert "no rooms left" in str(result["value"])
    assert digest(demo.path) == before


async def test_a_sqlite_store_reads_the_same(demo: DemoFile, tmp_path: Path) -> None:
    jsonl = await open_source(str(demo.path))
    database = tmp_path / "sessions.db"
    async with create_sqlite_session_store(database) as store:
        await store.append_many(await jsonl.entries("plain"))
    view = await view_of(database, "plain")
    assert view.costs.totals() == (await view_of(demo.path, "plain")).costs.totals()


# --- sources the inspector refuses, each with nothing written ---------------


async def test_a_directory_a_missing_path_and_binary_data_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InspectError, match="is a directory"):
        await open_source(str(tmp_path))
    with pytest.raises(InspectError, match="No such file"):
        await open_source(str(tmp_path / "missing.jsonl"))
    assert not (tmp_path / "missing.jsonl").exists()
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(InspectError, match="binary, not JSON lines"):
        await open_source(str(binary))


async def test_a_text_file_without_session_entries_is_not_a_session(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\n- eggs\n")
    before = digest(notes)
    with pytest.raises(InspectError, match="is not a session file: none of its lines"):
        await open_source(str(notes))
    assert digest(notes) == before


async def test_a_sqlite_database_of_another_program_is_refused_untouched(tmp_path: Path) -> None:
    database = tmp_path / "other.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE songs (title TEXT)")
    conn.close()
    before = digest(database)
    with pytest.raises(InspectError, match="without Prism sessions"):
        await open_source(str(database))
    assert digest(database) == before
    assert {p.name for p in tmp_path.iterdir()} == {"other.db"}


async def test_a_torn_file_shows_its_quarantine_and_the_good_part(
    demo: DemoFile, tmp_path: Path
) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(demo.path.read_bytes() + b'{"id":"half-writ')
    before = digest(torn)
    source = await open_source(str(torn))
    [problem] = source.quarantined()
    assert problem["line"] == len(demo.path.read_bytes().splitlines()) + 1
    view = SessionView("trip-planning", await source.entries("trip-planning"))
    assert view.costs.totals()["requests"] == 7
    assert digest(torn) == before


async def test_a_store_url_that_does_not_connect_says_so(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://prism:hunter2-password@127.0.0.1:{port}/prism"
    with anyio.fail_after(30):
        with pytest.raises(InspectError) as caught:
            source = await open_source(url, connect_timeout=2)
            await source.aclose()
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message or "connect" in message
    assert "hunter2-password" not in message


async def test_runs_without_checkpoints_are_found_by_their_input(demo: DemoFile) -> None:
    view = await view_of(demo.path, "plain")
    runs = find_runs(view.branch)
    assert len(runs) == 5 and not any(run.durable for run in runs)
    events = [event async for event in replay_run(view.branch, runs[3])]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "message_delta")
    assert text.startswith("Answer number 4: ")


async def test_a_postgres_store_reads_the_same(demo: DemoFile, pg_server: PgServer) -> None:
    from prism.stores.postgres import create_postgres_session_store

    schema = pg_server.create_schema()
    writer = create_postgres_session_store(pg_server.dsn(schema=schema))
    try:
        jsonl = await open_source(str(demo.path))
        await writer.append_many(await jsonl.entries("plain"))
    finally:
        await writer.aclose()
    url = f"{pg_server.url()}?options=-csearch_path%3D{schema}"
    source = await open_source(url)
    try:
        assert source.kind == "postgres" and pg_server.password not in source.label
        view = SessionView("plain", await source.entries("plain"))
    finally:
        await source.aclose()
    assert view.costs.totals() == (await view_of(demo.path, "plain")).costs.totals()


async def test_the_token_calibration_of_a_branch_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "calibrated.jsonl"
    await build_calibrated_session(create_jsonl_session_store(path))
    view = await view_of(path, "calibrated")
    damaged, row = view.cost_report()["calibration"]
    assert "version 7 is not 1" in damaged["problem"] and damaged["entryId"]
    assert row["model"] == "mock/billed" and row["turns"] >= 2
    assert set(row["ratios"]) == {"prose", "code", "tool"} and 1.8 < row["scale"] < 2.2
    assert row["reportedTokens"] > 0 and abs(row["lastError"]) < 0.05
    assert row["calibratedTokens"] and row["estimatedTokens"] < row["reportedTokens"]
    source = await open_source(str(path))
    page = await render_report(source, "calibrated", redactor=NOOP_REDACTOR)
    assert '"calibration":[' in page and '"model":"mock/billed"' in page


def test_a_calibration_record_does_not_shorten_its_turn_in_the_timeline() -> None:
    def entry(n: int, second: int, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"e{n}",
            "sessionId": "s",
            "parentId": f"e{n - 1}" if n else None,
            "createdAt": f"2026-01-01T00:00:{second:02d}.000Z",
            **fields,
        }

    def said(role: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": role}]}

    branch = [
        entry(0, 0, kind="message", message=said("user")),
        # Written in the same batch as the answer, three seconds later.
        entry(1, 3, kind="custom", customType=CALIBRATION_ENTRY, data={"version": 1}),
        entry(2, 3, kind="message", message=said("assistant")),
    ]
    (turn,) = [step for step in fold_timeline(branch) if step.kind == "turn"]
    assert turn.duration_ms == 3000
