"""Observational memory: fold + projection + render of a long branch.

Run: .venv/bin/python -m pytest benches/test_om_memory.py --benchmark-only \
       -p no:cacheprovider -o testpaths=benches --benchmark-columns=min,median,rounds

The branch has 100,000 entries, 10,000 of them memory records (observations,
reflections, drops, one earlier full fold). Target: at most 100 ms for fold
+ folded projection + render, and O(n): the 25k/50k/100k sizes should scale
linearly. Baseline measured in the same run: one bare Python loop that
reads ``kind`` and ``data.type`` of every entry (the floor any pass over the
branch pays).
"""

from __future__ import annotations

from typing import Any

import pytest

from prism.memory import (
    build_observational_memory_projection,
    fold_observational_memory_ledger,
    render_observational_memory,
)
from prism.security import NOOP_REDACTOR

SESSION = "bench-om"


def build_branch(n_entries: int, n_records: int) -> list[dict[str, Any]]:
    """Messages with a memory record every ``n_entries // n_records`` entries:
    mostly observation records (two observations each), every 10th a
    reflection, every 25th a drop; one om.folded compaction half way."""
    every = n_entries // n_records
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    observation_ids: list[str] = []
    next_id = 0
    records = 0

    def memory_id() -> str:
        nonlocal next_id
        next_id += 1
        return f"{next_id:012x}"

    for i in range(n_entries):
        entry_id = f"entry_{i}"
        entry: dict[str, Any] = {"id": entry_id, "sessionId": SESSION, "parentId": parent}
        if i % every == every - 1 and records < n_records:
            records += 1
            if records == n_records // 2:
                kept = [
                    {"id": o, "content": f"observation {o}", "sourceEntryIds": [f"entry_{i - 2}"]}
                    for o in observation_ids[-200:]
                ]
                entry.update(
                    kind="compaction",
                    summary="(memory)",
                    data={
                        "throughEntryId": f"entry_{i - 3}",
                        "keepEntryIds": [f"entry_{i - 1}"],
                        "strategy": "observational-memory",
                        "trigger": "auto",
                        "memory": {
                            "type": "om.folded",
                            "version": 1,
                            "fullFold": True,
                            "observations": kept,
                            "reflections": [],
                            "droppedObservationIds": observation_ids[:-200],
                        },
                    },
                )
            elif records % 25 == 0 and observation_ids:
                data = {
                    "type": "om.observations.dropped",
                    "observationIds": observation_ids[-5:-3],
                    "coversUpToId": f"entry_{i - 1}",
                }
                entry.update(kind="custom", customType=data["type"], data=data)
            elif records % 10 == 0 and observation_ids:
                data = {
                    "type": "om.reflections.recorded",
                    "reflections": [
                        {
                            "id": memory_id(),
                            "content": "The user keeps refining the same plan; prefers short answers.",
                            "observationIds": observation_ids[-6:],
                        }
                    ],
                    "coversUpToId": f"entry_{i - 1}",
                }
                entry.update(kind="custom", customType=data["type"], data=data)
            else:
                made = [
                    {
                        "id": memory_id(),
                        "content": f"User asked about item {i} and chose option {j}.",
                        "sourceEntryIds": [f"entry_{i - 1}", f"entry_{i - 2}"],
                    }
                    for j in range(2)
                ]
                observation_ids.extend(o["id"] for o in made)
                data = {
                    "type": "om.observations.recorded",
                    "observations": made,
                    "coversUpToId": f"entry_{i - 1}",
                }
                entry.update(kind="custom", customType=data["type"], data=data)
        else:
            role = "user" if i % 2 == 0 else "assistant"
            entry.update(
                kind="message",
                message={"role": role, "content": [{"type": "text", "text": f"turn {i} text"}]},
            )
        entries.append(entry)
        parent = entry_id
    return entries


def fold_project_render(entries: list[dict[str, Any]]) -> str:
    ledger = fold_observational_memory_ledger(entries)
    projection = build_observational_memory_projection(ledger, "folded")
    return render_observational_memory(
        projection.reflections, projection.observations, redactor=NOOP_REDACTOR
    )


def floor_pass(entries: list[dict[str, Any]]) -> int:
    seen = 0
    for entry in entries:
        if entry.get("kind") == "custom":
            data = entry.get("data")
            if isinstance(data, dict) and data.get("type"):
                seen += 1
    return seen


BRANCHES = {n: build_branch(n, n // 10) for n in (25_000, 50_000, 100_000)}


def test_branch_shape() -> None:
    branch = BRANCHES[100_000]
    records = [e for e in branch if e["kind"] in ("custom", "compaction")]
    assert len(branch) == 100_000 and len(records) == 10_000
    text = fold_project_render(branch)
    assert text.startswith("Reflections")


@pytest.mark.parametrize("size", [25_000, 50_000, 100_000])
def test_fold_projection_render(benchmark: Any, size: int) -> None:
    benchmark.group = "om fold+projection+render"
    result = benchmark(fold_project_render, BRANCHES[size])
    assert result


def test_floor_one_python_pass(benchmark: Any) -> None:
    benchmark.group = "om fold+projection+render"
    assert benchmark(floor_pass, BRANCHES[100_000]) > 0
