"""Durable runs: the checkpoint entry format and where a resume starts.

A durable run (``durable=True``) writes a checkpoint at each step boundary
as an ordinary ``custom`` session entry::

    {"kind": "custom", "customType": "prism.checkpoint", "data": {
        "version": 1,
        "runId": "run_...",
        "step": 3,                      # 1, 2, ... within the run
        "phase": "input" | "turn" | "tool_start" | "tool" | "end",
        "status": "completed" | "failed" | "aborted",   # "end" only
        "pendingToolCalls": [ToolCall, ...],  # recorded, no result yet
        "startedToolCallIds": ["call_..."],   # of those: already started
        "toolRounds": 2,                # since the last follow-up (max_tool_rounds)
        "totalToolRounds": 3,           # the whole run (RunResult.tool_rounds)
        "steering": [Message, ...],           # queued, not yet appended
        "followUps": [Message, ...],
        "sessionState": {"attentionSticky": {...}, "model": ModelConfig},
        "engine": "dbos",               # a replaying engine's run only
        "state": {"coding": {...}},     # create_agent(checkpoint_state=[...]) only
        "tokenCalibration": {...}       # token_calibration=, a turn whose fit moved
    }}

The checkpoint rides in the same ``append_many`` batch as the entries of
its step, after them: a step and its checkpoint are stored together, and
even a batch torn by a crash mid-write (a JSONL file keeps the lines that
made it) never holds a checkpoint without its step's entries. The
conversation itself (messages on the branch) is the ground truth a resume
continues from; the checkpoint adds what messages cannot say (which tool
call had started, queued input, session state). ``sessionState`` is written only with
``persist_session_state=True``.

Reading is forgiving: every field of a checkpoint is checked on its own and
a malformed one is dropped with a warning (the caller emits it as a
``checkpoint_warning`` event); nothing here raises on stored data. The
caller refuses to resume when a dropped field is evidence of which tool
calls ran (``EVIDENCE_FIELDS``) and a pending call depends on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.contracts import Message, ModelConfig, SessionEntry, ToolCall
from prism.runtime.approvals import parse_pending_approvals
from prism.runtime.structured import OUTPUT_TOOL_NAME

__all__ = [
    "CHECKPOINT_CUSTOM_TYPE",
    "CHECKPOINT_VERSION",
    "EVIDENCE_FIELDS",
    "Checkpoint",
    "ResumePoint",
    "answered_output",
    "find_resume_point",
    "is_checkpoint_entry",
    "parse_checkpoint",
]

CHECKPOINT_CUSTOM_TYPE = "prism.checkpoint"
CHECKPOINT_VERSION = 1
PHASES = frozenset({"input", "turn", "tool_start", "tool", "approval", "end"})
STATUSES = frozenset({"completed", "failed", "aborted"})
# Fields whose loss leaves a resume unable to tell which tool calls ran.
EVIDENCE_FIELDS = frozenset({"data", "pendingToolCalls", "startedToolCallIds"})

Warn = Callable[[str, str], None]


@dataclass(slots=True)
class Checkpoint:
    """A checkpoint as read back: each field already checked (a dropped one
    holds its default)."""

    run_id: str | None = None
    step: int = 0
    phase: str | None = None
    status: str | None = None
    pending_tool_calls: list[ToolCall] = field(default_factory=list)
    started_tool_call_ids: set[str] = field(default_factory=set)
    steering: list[Message] = field(default_factory=list)
    follow_ups: list[Message] = field(default_factory=list)
    tool_rounds: int = 0
    total_tool_rounds: int = 0
    attention_sticky: Mapping[str, Any] | None = None
    model: ModelConfig | None = None
    engine: str | None = None
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)
    state: Mapping[str, Any] | None = None  # feature state (prism.runtime.checkpoint_state)

    @property
    def finished(self) -> bool:
        return self.phase == "end"


def is_checkpoint_entry(entry: object) -> bool:
    return (
        isinstance(entry, Mapping)
        and entry.get("kind") == "custom"
        and entry.get("customType") == CHECKPOINT_CUSTOM_TYPE
    )


def _is_message(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("role") in ("user", "assistant", "tool", "system")
        and isinstance(value.get("content"), list)
        and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in value["content"])
    )


def _is_tool_call(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("id"), str)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("arguments", {}), Mapping)
    )


def _items(
    data: Mapping[str, Any], name: str, ok: Callable[[object], bool], warn: Warn
) -> list[Any]:
    """A list field, keeping the well-formed items and warning about the rest."""
    value = data.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        warn(name, f"expected a list, got {type(value).__name__}; dropped")
        return []
    kept = [dict(item) if isinstance(item, Mapping) else item for item in value if ok(item)]
    if len(kept) != len(value):
        warn(name, f"dropped {len(value) - len(kept)} malformed item(s)")
    return kept


def _count(data: Mapping[str, Any], name: str, warn: Warn) -> int:
    value = data.get(name, 0)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    warn(name, "expected a non-negative int; counting from the branch")
    return 0


def parse_checkpoint(data: object, warn: Warn) -> Checkpoint:
    """Read a checkpoint's ``data`` field by field; never raises."""
    checkpoint = Checkpoint()
    if not isinstance(data, Mapping):
        warn("data", f"expected an object, got {type(data).__name__}; checkpoint ignored")
        return checkpoint
    version = data.get("version")
    if version != CHECKPOINT_VERSION:
        warn("version", f"unknown checkpoint version {version!r}; reading it as version 1")
    run_id = data.get("runId")
    if isinstance(run_id, str) and run_id:
        checkpoint.run_id = run_id
    else:
        warn("runId", "missing or not a string; the resumed run gets a new id")
    step = data.get("step")
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        checkpoint.step = step
    else:
        warn("step", "missing or not a non-negative int; counting from 0")
    phase = data.get("phase")
    if isinstance(phase, str) and phase in PHASES:
        checkpoint.phase = phase
    else:
        warn("phase", f"unknown phase {phase!r}; the resume point is read from the branch")
    if checkpoint.phase == "end":
        status = data.get("status")
        checkpoint.status = (
            status if isinstance(status, str) and status in STATUSES else "completed"
        )
    if (engine := _optional(data, "engine", _is_name, "a non-empty string", warn)) is not None:
        checkpoint.engine = engine
    checkpoint.tool_rounds = _count(data, "toolRounds", warn)
    checkpoint.total_tool_rounds = _count(data, "totalToolRounds", warn)
    checkpoint.pending_tool_calls = _items(data, "pendingToolCalls", _is_tool_call, warn)
    started = _items(data, "startedToolCallIds", lambda v: isinstance(v, str), warn)
    checkpoint.started_tool_call_ids = set(started)
    checkpoint.pending_approvals = parse_pending_approvals(data)
    checkpoint.steering = _items(data, "steering", _is_message, warn)
    checkpoint.follow_ups = _items(data, "followUps", _is_message, warn)
    if (carried := _optional(data, "state", _is_object, "an object", warn)) is not None:
        checkpoint.state = carried
    state = _optional(data, "sessionState", _is_object, "an object", warn)
    if state is not None:
        where = "sessionState."
        sticky = _optional(state, "attentionSticky", _is_object, "an object", warn, where)
        if sticky is not None:
            checkpoint.attention_sticky = sticky
        model = _optional(state, "model", _is_model, "a model config", warn, where)
        if model is not None:
            checkpoint.model = dict(model)  # type: ignore[assignment]
    return checkpoint


def _optional(
    data: Mapping[str, Any],
    key: str,
    accept: Callable[[Any], bool],
    expected: str,
    warn: Warn,
    where: str = "",
) -> Any:
    """``data[key]`` when ``accept`` takes it; absent is ``None``, anything
    else is warned about (as ``where + key``) and dropped."""
    value = data.get(key)
    if value is None or accept(value):
        return value
    warn(where + key, f"expected {expected}; dropped")
    return None


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _is_object(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_model(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("provider"), str)
        and isinstance(value.get("model"), str)
    )


@dataclass(slots=True)
class ResumePoint:
    """Where an unfinished run continues.

    ``stage`` is read from the branch (the messages are the ground truth):
    ``"tools"`` (the last assistant message has calls without results, in
    ``pending``), ``"final"`` (the last message is an assistant answer with no
    calls: only the queues are left), or ``"request"`` (the next step is a
    provider turn). ``assistant_message`` is the last assistant message for
    ``"tools"`` and ``"final"``, and for ``"request"`` when its calls are all
    answered; ``entry_id`` is the checkpoint's entry; ``dispatched`` tells
    whether the checkpoint comes after the last assistant message (its tool
    calls may have started; before it, none had).
    """

    checkpoint: Checkpoint
    stage: str
    pending: list[ToolCall]
    assistant_message: Message | None
    run_messages: list[Message]
    entry_id: str = ""
    dispatched: bool = False


def _tool_calls(message: Message) -> list[ToolCall]:
    return [
        {"id": b["id"], "name": b["name"], "arguments": b.get("arguments") or {}}  # type: ignore[typeddict-item]
        for b in message["content"]
        if b.get("type") == "tool_call" and isinstance(b.get("id"), str)
    ]


def _answered_ids(messages: Sequence[Message]) -> set[str]:
    return {
        b["toolCallId"]  # type: ignore[typeddict-item]
        for m in messages
        if m.get("role") == "tool"
        for b in m["content"]
        if b.get("type") == "tool_result"
    }


def _run_start(branch: Sequence[SessionEntry], index: int, run_id: str | None) -> int:
    """Index of the run's first entry: the ``startEntryId`` of its step-1
    checkpoint, else just after the checkpoint before that one (or the
    branch's root), else the newest checkpoint itself."""
    for position in range(index, -1, -1):
        entry = branch[position]
        if not is_checkpoint_entry(entry):
            continue
        data = entry.get("data")
        if not isinstance(data, Mapping) or data.get("step") != 1:
            continue
        if run_id is not None and data.get("runId") != run_id:
            continue
        first = data.get("startEntryId")
        for earlier in range(position, -1, -1):
            if branch[earlier].get("id") == first:
                return earlier
        # No usable start id: the run began after the previous checkpoint.
        for earlier in range(position - 1, -1, -1):
            if is_checkpoint_entry(branch[earlier]):
                return earlier + 1
        return 0
    return index


def answered_output(assistant: Message, messages: Sequence[Message]) -> Any:
    """The arguments of ``assistant``'s structured-output call when
    ``messages`` answer it without an error, else None."""
    calls = [c for c in _tool_calls(assistant) if c["name"] == OUTPUT_TOOL_NAME]
    for call in calls:
        for message in messages:
            if message.get("role") != "tool":
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result" and block.get("toolCallId") == call["id"]:
                    if not block.get("isError"):
                        return call["arguments"]
    return None


def _after_message(branch: Sequence[SessionEntry], index: int, message: Message) -> bool:
    """Whether ``message``'s entry comes before ``branch[index]``."""
    for position in range(index - 1, -1, -1):
        if branch[position].get("message") is message:
            return True
    return False


def find_resume_point(branch: Sequence[SessionEntry], warn: Warn) -> ResumePoint | None:
    """The newest run on ``branch`` that has a checkpoint and did not finish,
    or None (no durable run, or the newest one finished)."""
    index = len(branch) - 1
    while index >= 0 and not is_checkpoint_entry(branch[index]):
        index -= 1
    if index < 0:
        return None
    entry_id = str(branch[index].get("id"))
    checkpoint = parse_checkpoint(branch[index].get("data"), warn)
    if checkpoint.finished:
        return None
    # The run's own messages (for its result) start at the entry its first
    # checkpoint names; the resume point itself is read from the whole branch.
    start = _run_start(branch, index, checkpoint.run_id)
    run_messages: list[Message] = [
        e["message"]  # type: ignore[typeddict-item]
        for e in branch[start:]
        if e.get("kind") == "message"
    ]
    messages: list[Message] = [
        e["message"]  # type: ignore[typeddict-item]
        for e in branch
        if e.get("kind") == "message"
    ]
    last_assistant = None
    for position in range(len(messages) - 1, -1, -1):
        if messages[position].get("role") == "assistant":
            last_assistant = position
            break
    if last_assistant is not None:
        assistant = messages[last_assistant]
        later = messages[last_assistant + 1 :]
        calls = _tool_calls(assistant)
        if calls:
            answered = _answered_ids(later)
            pending = [c for c in calls if c["id"] not in answered]
            stage = "tools" if pending else "request"
            dispatched = _after_message(branch, index, assistant)
            return ResumePoint(
                checkpoint, stage, pending, assistant, run_messages, entry_id, dispatched
            )
        if not later:
            return ResumePoint(checkpoint, "final", [], assistant, run_messages, entry_id)
    return ResumePoint(checkpoint, "request", [], None, run_messages, entry_id)
