"""A workflow's durable record: ``custom`` entries in a session store.

Each step boundary is one append of one ``custom`` entry (``customType``
``"prism.workflow"``) in the session named by the workflow id, chained by
``parentId`` like every session entry, so the JSONL, SQLite and PostgreSQL
stores (and any ``SessionStore``) hold it with their usual guarantees. The
records (``data``; docs/workflows.md has the table):

- ``start``: workflow name, format version, the input, each step's fingerprint;
- ``begin``: a non-idempotent step is about to run (its crash is then known);
- ``agent``: an agent run of a step is about to start (its session and leaf);
- ``done``: a step finished: the value it passes on and where it goes;
- ``paused`` / ``decided``: pending human decisions and the answers given;
- ``end``: completed (with the output), failed (with the error) or cancelled.

Reading them back (``replay``) gives where a resume continues.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prism._clock import utc_timestamp
from prism.contracts import SessionEntry
from prism.stores import SessionStore

__all__ = ["WORKFLOW_ENTRY", "Replayed", "WorkflowLog", "replay"]

WORKFLOW_ENTRY = "prism.workflow"
FORMAT_VERSION = 1


class WorkflowLog:
    """Appends records to one workflow's session, one entry per record."""

    __slots__ = ("parent", "store", "workflow_id")

    def __init__(self, store: SessionStore, workflow_id: str, parent: str | None) -> None:
        self.store = store
        self.workflow_id = workflow_id
        self.parent = parent

    async def write(self, record: dict[str, Any]) -> None:
        entry_id = f"entry_{uuid.uuid4().hex[:20]}"
        entry: dict[str, Any] = {
            "id": entry_id,
            "sessionId": self.workflow_id,
            "parentId": self.parent,
            "kind": "custom",
            "customType": WORKFLOW_ENTRY,
            "createdAt": utc_timestamp(),
            "data": record,
        }
        await self.store.append(entry)  # type: ignore[arg-type]
        self.parent = entry_id


@dataclass
class Replayed:
    """Where a stored workflow stands."""

    start: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    seq: int = 0  # the next step's sequence number
    step: str | None = None  # the next step to run (None before start / after END)
    value: Any = None  # its input, as JSON data
    via: tuple[str, str] | None = None  # (step, "in"/"out"): the adapter that reads value
    loops: dict[str, int] = field(default_factory=dict)
    begins: int = 0  # ``begin`` records of the next step
    agent_calls: dict[int, dict[str, Any]] = field(default_factory=dict)  # of the next step
    paused: dict[str, Any] | None = None  # the newest pause of the next step
    decided: dict[str, Any] = field(default_factory=dict)  # approval id -> decision JSON
    visited: list[str] = field(default_factory=list)  # steps with any record, in order
    last: str | None = None  # the id of the newest entry
    done: int = 0  # finished steps
    cancelled: bool = False  # the newest record says a cancel stopped it


def replay(entries: Sequence[SessionEntry]) -> Replayed:
    """The state a workflow's records add up to (records of other kinds in
    the session are ignored)."""
    state = Replayed()
    for entry in entries:
        state.last = entry["id"]
        if entry.get("kind") != "custom" or entry.get("customType") != WORKFLOW_ENTRY:
            continue
        data = entry.get("data")
        if isinstance(data, dict):
            _apply(state, data)
    return state


def _apply(state: Replayed, record: dict[str, Any]) -> None:
    kind = record.get("t")
    if kind == "start":
        state.start = record
        state.step = record.get("first")
        state.value = record.get("input")
        state.via = (str(state.step), "in")
        return
    if kind == "end":
        state.end = record
        return
    state.cancelled = kind == "cancelled"
    step = record.get("step")
    if isinstance(step, str) and step not in state.visited:
        state.visited.append(step)
    if kind == "begin":
        state.begins += 1
    elif kind == "agent":
        state.agent_calls[int(record.get("call", 0))] = record
    elif kind == "paused":
        state.paused = record
    elif kind == "decided":
        state.decided.update(record.get("decisions") or {})
    elif kind == "done":
        state.seq = int(record["seq"]) + 1
        state.step = record.get("next")
        state.value = record.get("value")
        via = record.get("via") or [step, "out"]
        state.via = (str(via[0]), str(via[1]))
        state.loops = dict(record.get("loops") or {})
        state.begins = 0
        state.agent_calls = {}
        state.paused = None
        state.decided = {}
        state.done += 1
