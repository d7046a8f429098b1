"""Fold a branch's stored entries into the steps of an execution timeline.

Events are not stored, so the steps are read back from entries: an
assistant message is a provider ``turn``, each tool result a ``tool`` step
(a ``sub-agent`` step when the tool delegates), a compaction entry a
``compaction``, ``om.*`` records ``memory``, a stored attention frontier an
``attention`` step (the gate tripped), approval records ``approval`` and
durable checkpoints mark where runs start and end (the per-step
checkpoints fold into the step they close). Durations are the time between
an entry's ``createdAt`` and the entry the step started from (the previous
entry, or a tool call's ``tool_start`` checkpoint). Retries leave nothing in
a store, so ``retry`` steps come only from a live event stream (replay).

A fold keeps each step as a small tuple (kind, branch position, duration,
details) and describes only the steps of the page asked for: a 100,000-entry
branch folds in one pass without building 100,000 dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from prism.attention.calibration import CALIBRATION_ENTRY

__all__ = ["STEP_KINDS", "Step", "describe_step", "fold_timeline", "parse_time"]

# Entries as read back from a store, possibly written by another tool.
Entry = Mapping[str, Any]

STEP_KINDS = (
    "input",
    "turn",
    "tool",
    "retry",
    "attention",
    "compaction",
    "memory",
    "approval",
    "checkpoint",
    "sub-agent",
    "model",
)
_DELEGATING = ("agent", "delegate", "spawn")
_SUB_AGENT_TYPES = ("subagent", "sub_agent", "supervisor", "child")


class Step(NamedTuple):
    kind: str
    position: int  # in the branch
    duration_ms: float | None
    block: int = -1  # the tool result's index in its message
    status: str = "ok"
    checkpointed: bool = False
    run_id: str | None = None


def parse_time(value: object) -> float | None:
    """Milliseconds since the epoch of an ISO ``createdAt``, or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return None


def _text_preview(message: Mapping[str, Any], limit: int = 80) -> str:
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            text = " ".join(str(block.get("text", ""))[: limit * 4].split())
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""


def _custom_kind(custom_type: str) -> str | None:
    if custom_type == "prism.checkpoint":
        return "checkpoint"
    if custom_type == "prism.attention_frontier":
        return "attention"
    if custom_type.startswith("om."):
        return "memory"
    if "approval" in custom_type:
        return "approval"
    if any(word in custom_type for word in _SUB_AGENT_TYPES):
        return "sub-agent"
    return None


class _Folder:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.previous: float | None = None
        self.turn_time: float | None = None
        self.tool_started: dict[str, float] = {}
        self.run_id: str | None = None

    def add(
        self, kind: str, position: int, start: float | None, end: float | None, **extra: Any
    ) -> None:
        duration = None if end is None or start is None else max(0.0, end - start)
        self.steps.append(Step(kind, position, duration, run_id=self.run_id, **extra))

    def message(self, position: int, message: Mapping[str, Any], at: float | None) -> None:
        role = message.get("role")
        if role == "assistant":
            self.add("turn", position, self.previous, at)
            self.turn_time = at
        elif role == "tool":
            for index, block in enumerate(message.get("content") or ()):
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                name = str(block.get("name", "tool")).lower()
                start = self.tool_started.pop(str(block.get("toolCallId")), None)
                start = start if start is not None else (self.turn_time or self.previous)
                kind = "sub-agent" if any(w in name for w in _DELEGATING) else "tool"
                status = "error" if block.get("isError") else "ok"
                self.add(kind, position, start, at, block=index, status=status)
        elif role == "user":
            self.add("input", position, None, None)

    def custom(self, position: int, entry: Entry, at: float | None) -> None:
        kind = _custom_kind(str(entry.get("customType", "")))
        if kind is None:
            return
        if kind != "checkpoint":
            self.add(kind, position, self.previous, at)
            return
        data = entry.get("data")
        data = data if isinstance(data, dict) else {}
        if isinstance(data.get("runId"), str):
            self.run_id = data["runId"]
        phase = data.get("phase")
        if phase == "tool_start" and at is not None:
            for call_id in data.get("startedToolCallIds") or ():
                self.tool_started.setdefault(str(call_id), at)
        if phase in ("input", "end"):
            self.add("checkpoint", position, None, None)
        elif self.steps and not self.steps[-1].checkpointed:
            self.steps[-1] = self.steps[-1]._replace(checkpointed=True)

    def fold(self, branch: Sequence[Entry]) -> list[Step]:
        for position, entry in enumerate(branch):
            kind = entry["kind"]
            at = parse_time(entry.get("createdAt"))
            if kind == "message":
                self.message(position, entry["message"], at)
            elif kind == "custom":
                self.custom(position, entry, at)
            elif kind == "compaction":
                self.add("compaction", position, self.previous, at)
            elif kind == "model_change":
                self.add("model", position, None, None)
            # A calibration record is written in its turn's batch, ahead of
            # the answer: the turn still started at the entry before it.
            if at is not None and entry.get("customType") != CALIBRATION_ENTRY:
                self.previous = at
        return self.steps


def fold_timeline(branch: Sequence[Entry]) -> list[Step]:
    """The steps of ``branch`` (root first), oldest first."""
    return _Folder().fold(branch)


def _title(step: Step, entry: Entry) -> str:
    if step.kind == "turn":
        message = entry["message"]
        calls = [
            str(b.get("name"))
            for b in message.get("content") or ()
            if isinstance(b, dict) and b.get("type") == "tool_call"
        ]
        return f"turn → {', '.join(calls)}" if calls else f"turn: {_text_preview(message)}"
    if step.kind in ("tool", "sub-agent") and step.block >= 0:
        return str(entry["message"]["content"][step.block].get("name", "tool"))
    if step.kind == "input":
        return f"input: {_text_preview(entry['message'])}"
    if step.kind == "compaction":
        data = entry.get("data") or {}
        return f"compaction ({data.get('trigger', 'manual')}, {len(data.get('keepEntryIds') or ())} kept)"
    if step.kind == "model":
        return f"model → {entry['model'].get('model')}"
    data = entry.get("data")
    data = data if isinstance(data, dict) else {}
    if step.kind == "checkpoint":
        status = data.get("status", "started")
        return f"run {status} (step {data.get('step')})"
    if step.kind == "attention":
        kept = sum(len(v) for v in data.values() if isinstance(v, list))
        return f"gate tripped: {kept} row(s) kept whole"
    custom_type = str(entry.get("customType", ""))
    return custom_type.removeprefix("om.") if step.kind == "memory" else custom_type


def describe_step(index: int, step: Step, branch: Sequence[Entry]) -> dict[str, Any]:
    """The JSON form of one step, as the page shows it."""
    entry = branch[step.position]
    described: dict[str, Any] = {
        "index": index,
        "kind": step.kind,
        "title": _title(step, entry),
        "entryId": entry["id"],
        "at": entry.get("createdAt"),
        "durationMs": None if step.duration_ms is None else round(step.duration_ms, 1),
        "runId": step.run_id,
        "status": step.status,
        "checkpointed": step.checkpointed,
    }
    if step.block >= 0:
        described["toolCallId"] = entry["message"]["content"][step.block].get("toolCallId")
    return described
