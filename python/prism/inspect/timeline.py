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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

# Entries as read back from a store, possibly written by another tool.
Entry = Mapping[str, Any]


__all__ = ["STEP_KINDS", "fold_timeline", "parse_time"]

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
        if isinstance(block, Mapping) and block.get("type") == "text":
            text = " ".join(str(block.get("text", "")).split())
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""


class _Folder:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.previous_time: float | None = None
        self.tool_started: dict[str, float] = {}
        self.turn_time: float | None = None
        self.run_id: str | None = None

    def step(self, kind: str, entry: Entry, title: str, start: float | None, **extra: Any) -> None:
        end = parse_time(entry.get("createdAt"))
        duration = None if end is None or start is None else max(0.0, end - start)
        self.steps.append(
            {
                "index": len(self.steps),
                "kind": kind,
                "title": title,
                "entryId": entry["id"],
                "at": entry.get("createdAt"),
                "durationMs": None if duration is None else round(duration, 1),
                "runId": self.run_id,
                **extra,
            }
        )

    def message(self, entry: Entry) -> None:
        message = entry["message"]
        role = message.get("role")
        if role == "assistant":
            calls = [b for b in message.get("content") or () if b.get("type") == "tool_call"]
            names = ", ".join(str(c.get("name")) for c in calls)
            title = f"turn → {names}" if calls else f"turn: {_text_preview(message)}"
            self.step("turn", entry, title, self.previous_time, toolCalls=len(calls))
            self.turn_time = parse_time(entry.get("createdAt"))
        elif role == "tool":
            for block in message.get("content") or ():
                if block.get("type") != "tool_result":
                    continue
                name = str(block.get("name", "tool"))
                call_id = str(block.get("toolCallId", ""))
                start = self.tool_started.pop(call_id, self.turn_time or self.previous_time)
                kind = "sub-agent" if any(w in name.lower() for w in _DELEGATING) else "tool"
                status = "error" if block.get("isError") else "ok"
                self.step(kind, entry, name, start, toolCallId=call_id, status=status)
        elif role == "user":
            self.step("input", entry, f"input: {_text_preview(message)}", None)

    def custom(self, entry: Entry) -> None:
        custom_type = str(entry.get("customType", ""))
        data = entry.get("data")
        data = data if isinstance(data, Mapping) else {}
        if custom_type == "prism.checkpoint":
            self.checkpoint(entry, data)
        elif custom_type == "prism.attention_frontier":
            kept = sum(len(v) for v in data.values() if isinstance(v, list))
            self.step(
                "attention", entry, f"gate tripped: {kept} rows kept whole", self.previous_time
            )
        elif custom_type.startswith("om."):
            self.step("memory", entry, custom_type.removeprefix("om."), self.previous_time)
        elif "approval" in custom_type:
            self.step("approval", entry, custom_type, self.previous_time)
        elif any(w in custom_type for w in ("subagent", "sub_agent", "supervisor", "child")):
            self.step("sub-agent", entry, custom_type, self.previous_time)

    def checkpoint(self, entry: Entry, data: Mapping[str, Any]) -> None:
        phase = data.get("phase")
        if isinstance(data.get("runId"), str):
            self.run_id = data["runId"]
        at = parse_time(entry.get("createdAt"))
        if phase == "tool_start" and at is not None:
            for call_id in data.get("startedToolCallIds") or ():
                self.tool_started.setdefault(str(call_id), at)
        if phase in ("input", "end"):
            status = data.get("status", "started")
            self.step(
                "checkpoint", entry, f"run {status} (step {data.get('step')})", None, phase=phase
            )
        elif self.steps:
            self.steps[-1]["checkpointed"] = True

    def fold(self, branch: Sequence[Entry]) -> list[dict[str, Any]]:
        for entry in branch:
            kind = entry["kind"]
            if kind == "message":
                self.message(entry)
            elif kind == "custom":
                self.custom(entry)
            elif kind == "compaction":
                data = entry["data"]
                kept = len(data.get("keepEntryIds") or ())
                label = f"compaction ({data.get('trigger', 'manual')}, {kept} kept)"
                self.step("compaction", entry, label, self.previous_time)
            elif kind == "model_change":
                model = entry["model"]
                self.step("model", entry, f"model → {model.get('model')}", None)
            at = parse_time(entry.get("createdAt"))
            if at is not None:
                self.previous_time = at
        return self.steps


def fold_timeline(branch: Sequence[Entry]) -> list[dict[str, Any]]:
    """The steps of ``branch`` (root first), oldest first."""
    return _Folder().fold(branch)
