"""Golden files: ledger folding, the three projections and the rendered
memory of two fixed branches (one with drops, coverage markers and a
malformed record; one continuing past a full fold).

Regenerate after an intended change with PRISM_UPDATE_GOLDEN=1 and review
the diff: the goldens are the wire contract.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from prism.compaction import CompactionContext
from prism.memory import (
    build_observational_memory_projection,
    create_observational_memory_compaction_strategy,
    fold_observational_memory_ledger,
    render_observational_memory,
)
from prism.security import NOOP_REDACTOR

GOLDEN = Path(__file__).parent / "golden"


def load_branch(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / name).read_text().splitlines()]


def snapshot(entries: list[dict[str, Any]]) -> dict[str, Any]:
    ledger = fold_observational_memory_ledger(entries)
    out: dict[str, Any] = {"ledger": ledger.summary()}
    for mode in ("active", "full", "folded"):
        projection = build_observational_memory_projection(entries, mode)  # type: ignore[arg-type]
        out[mode] = projection.to_json()
        out[f"{mode}Render"] = render_observational_memory(
            projection.reflections, projection.observations, redactor=NOOP_REDACTOR
        ).splitlines()
    return out


def check_golden(name: str, actual: dict[str, Any]) -> None:
    path = GOLDEN / name
    text = json.dumps(actual, indent=2, sort_keys=True) + "\n"
    if os.environ.get("PRISM_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with PRISM_UPDATE_GOLDEN=1"
    assert json.loads(path.read_text()) == actual


@pytest.mark.parametrize(
    ("branch", "golden"),
    [
        ("om_branch.jsonl", "om_branch.expected.json"),
        ("om_branch_folded.jsonl", "om_branch_folded.expected.json"),
    ],
)
def test_fold_and_projections_match_golden(branch: str, golden: str) -> None:
    check_golden(golden, snapshot(load_branch(branch)))


def test_golden_branch_reads_the_way_the_issue_describes() -> None:
    # Independent of the golden files, the facts a reviewer would check by hand.
    entries = load_branch("om_branch.jsonl")
    ledger = fold_observational_memory_ledger(entries)
    assert list(ledger.observations) == [
        "0000000000a1",
        "0000000000a2",
        "0000000000a3",
        "0000000000a4",
    ]
    assert list(ledger.dropped) == ["0000000000a2"]
    assert ledger.observed_up_to == "e07"  # the empty record still moves the marker
    assert ledger.reflected_up_to == "r02"
    assert ledger.dropped_up_to == "r03"
    assert ledger.invalid_entry_ids == ["r05"]
    active = build_observational_memory_projection(entries, "active")
    assert [o["id"] for o in active.observations] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    full = build_observational_memory_projection(entries, "full")
    assert len(full.observations) == 4
    assert full.dropped_observation_ids == ["0000000000a2"]


def test_after_a_full_fold_the_visible_memory_is_the_fold_plus_newer_records() -> None:
    entries = load_branch("om_branch_folded.jsonl")
    fold = next(e for e in entries if e["kind"] == "compaction")
    assert fold["data"]["memory"]["fullFold"] is True
    folded = build_observational_memory_projection(entries, "folded")
    assert folded.full_fold
    assert [o["id"] for o in folded.observations] == ["0000000000a5"]
    assert [r["id"] for r in folded.reflections] == ["0000000000b1"]
    # a3 was dropped after the fold; a1 and a4 stay folded out of view.
    assert folded.hidden_observation_ids == ["0000000000a1", "0000000000a4"]
    active = build_observational_memory_projection(entries, "active")
    assert [o["id"] for o in active.observations] == [
        "0000000000a1",
        "0000000000a4",
        "0000000000a5",
    ]


@pytest.mark.anyio
async def test_the_strategy_reproduces_the_golden_fold() -> None:
    entries = load_branch("om_branch_folded.jsonl")
    expected = next(e for e in entries if e["kind"] == "compaction")
    before = entries[: entries.index(expected)]
    strategy = create_observational_memory_compaction_strategy(
        keep_recent_entries=1,
        overrides={"observationsPoolMaxTokens": 10, "observationsPoolTargetTokens": 10},
    )
    result = await strategy.compact(
        CompactionContext(
            session_id="golden", entries=before, new_entry_id=lambda: "c01", redactor=NOOP_REDACTOR
        )
    )
    (entry,) = result.entries
    assert entry["data"] == expected["data"]
    assert entry["summary"] == expected["summary"] == result.summary
    assert entry["parentId"] == "r06"
