"""Per-turn input tokens, cache reads and writes, cost and cache busts of a
branch: the attention benchmark's cost model (prism._bench.attention.scenario)
applied to requests rebuilt from stored entries.

The model, as in the benchmark: a request is its tool declarations (one
row) plus its messages, each row estimated with the native token
estimator. A prompt cache keeps the previous request; the longest common
prefix of rows is read at 0.1x and the rest written at 1.25x, in
base-input-token units. A cache bust is a request whose previous request is
not a prefix of it.

What the store does not hold, and so the rebuilt request leaves out: the
system prompt and the tool declarations (the tools row is an empty list
here), and any change the attention compiler made to a request (the
request is the uncompiled history). For a session run without a system
prompt, tools or attention compiler the figures equal the benchmark's.

Rows are only re-compared after a compaction or a summary changed the
request's head; between those, history only grows, so the previous request
is a prefix of the next and a 100,000-entry branch costs one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism import _native
from prism._json_fields import write_json_fields
from prism.contracts import Message

# Entries as read back from a store, possibly written by another tool.
Entry = Mapping[str, Any]

__all__ = ["CACHE_READ", "CACHE_WRITE", "DEFAULT_WINDOW", "BranchCosts", "TurnCost", "branch_costs"]

CACHE_READ = 0.1
CACHE_WRITE = 1.25
DEFAULT_WINDOW = 200_000
_FRONTIER = "prism.attention_frontier"
_CHECKPOINT = "prism.checkpoint"


@dataclass(slots=True)
class TurnCost:
    turn: int
    entry_id: str
    input_tokens: int
    reported_input_tokens: int | None
    cache_read: int
    cache_write: int
    bust: bool
    trip: bool = False

    @property
    def cost(self) -> float:
        return self.cache_read * CACHE_READ + self.cache_write * CACHE_WRITE

    def to_json(self) -> dict[str, Any]:
        return {
            **write_json_fields(self, "turn", "entry_id", "input_tokens", "reported_input_tokens"),
            "cacheReadTokens": self.cache_read,
            "cacheWriteTokens": self.cache_write,
            "cost": round(self.cost, 1),
            "bust": self.bust,
            "gateTrip": self.trip,
        }


@dataclass
class BranchCosts:
    turns: list[TurnCost] = field(default_factory=list)
    window: int = DEFAULT_WINDOW

    def totals(self) -> dict[str, Any]:
        """The benchmark's summary keys (``VariantResult.to_json``)."""
        turns = self.turns
        return {
            "requests": len(turns),
            "totalInputTokens": sum(t.input_tokens for t in turns),
            "peakInputTokens": max((t.input_tokens for t in turns), default=0),
            "cacheBusts": sum(t.bust for t in turns),
            "cacheReadTokens": sum(t.cache_read for t in turns),
            "cacheWriteTokens": sum(t.cache_write for t in turns),
            "cacheAwareCost": round(sum(t.cost for t in turns)),
            "requestsOverWindow": sum(1 for t in turns if t.input_tokens > self.window),
            "gateTrips": sum(t.trip for t in turns),
            "window": self.window,
        }


def _summary_message(text: str) -> Message:
    # The default input builder's rendering of a summary (prism.assembly.groups).
    return {
        "role": "system",
        "content": [{"type": "text", "text": f"Conversation summary:\n{text}"}],
    }


def _reported_input(entry: Entry, message: Mapping[str, Any]) -> int | None:
    # dict, not Mapping: an ABC check per turn costs seconds on a long branch.
    for holder in (message.get("metadata"), entry):
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("inputTokens"), int):
            return int(usage["inputTokens"])
    return None


def _frontier_size(entry: Mapping[str, Any]) -> int | None:
    data = entry.get("data")
    if entry.get("customType") == _CHECKPOINT:
        state = data.get("sessionState") if isinstance(data, Mapping) else None
        data = state.get("attentionSticky") if isinstance(state, Mapping) else None
    elif entry.get("customType") != _FRONTIER:
        return None
    if not isinstance(data, Mapping):
        return None
    return sum(
        len(v) for v in (data.get("thinking"), data.get("toolCallIds")) if isinstance(v, list)
    )


class _Request:
    """The request the next turn would send, kept as rows and estimates.

    Totals are kept running: between head changes a send costs O(1), so a
    branch is scored in one pass whatever its length."""

    def __init__(self) -> None:
        self.summaries: list[Message] = []
        self.history: list[Message] = []
        self.tokens: list[int] = [int(_native.estimate_value_tokens([]))]
        self.total = self.tokens[0]
        self.sent_rows = 0  # rows of the previous request (0: none yet)
        self.sent_total = 0
        self.sent_snapshot: list[Message] | None = None  # set when the head changed
        self.head_changed = False

    def rows(self) -> list[Message]:
        return [*self.summaries, *self.history]

    def append(self, message: Message) -> None:
        self.history.append(message)
        tokens = int(_native.estimate_message_tokens(message))
        self.tokens.append(tokens)
        self.total += tokens

    def rebuild(self, summaries: list[Message], history: list[Message]) -> None:
        if not self.head_changed and self.sent_rows:
            self.sent_snapshot = self.rows()[: self.sent_rows - 1]
        self.head_changed = True
        self.summaries, self.history = summaries, history
        self.tokens = [self.tokens[0]] + [
            int(_native.estimate_message_tokens(m)) for m in self.rows()
        ]
        self.total = sum(self.tokens)

    def send(self) -> tuple[int, int, bool]:
        """(total, read, bust) of sending the current rows now."""
        total = self.total
        if not self.sent_rows:
            read, bust = 0, False
        elif not self.head_changed:
            read, bust = self.sent_total, False
        else:
            previous = self.sent_snapshot or []
            current = self.rows()
            matched = 0
            for old, new in zip(previous, current, strict=False):
                if old != new:
                    break
                matched += 1
            shared = 1 + matched
            read, bust = sum(self.tokens[:shared]), shared < self.sent_rows
        self.sent_rows, self.sent_total = len(self.tokens), total
        self.sent_snapshot, self.head_changed = None, False
        return total, read, bust


def branch_costs(branch: Sequence[Entry], window: int | None = None) -> BranchCosts:
    """Score every assistant turn of ``branch`` (root first)."""
    result = BranchCosts(window=window or _window_of(branch))
    request = _Request()
    last_frontier = 0
    for index, entry in enumerate(branch):
        kind = entry["kind"]
        if kind == "message":
            message = entry["message"]
            if message.get("role") == "assistant":
                total, read, bust = request.send()
                result.turns.append(
                    TurnCost(
                        turn=len(result.turns) + 1,
                        entry_id=entry["id"],
                        input_tokens=total,
                        reported_input_tokens=_reported_input(entry, message),
                        cache_read=read,
                        cache_write=total - read,
                        bust=bust,
                    )
                )
            request.append(message)
        elif kind == "compaction":
            keep = set(entry["data"].get("keepEntryIds") or ())
            kept = [
                e["message"] for e in branch[:index] if e["kind"] == "message" and e["id"] in keep
            ]
            request.rebuild([_summary_message(entry["summary"])], kept)
        elif kind == "summary":
            request.rebuild(
                [*request.summaries, _summary_message(entry["summary"])], request.history
            )
        elif kind == "custom":
            size = _frontier_size(entry)
            if size is not None:
                if size > last_frontier and result.turns:
                    result.turns[-1].trip = True
                last_frontier = size
    return result


def _window_of(branch: Sequence[Entry]) -> int:
    for entry in reversed(branch):
        if entry["kind"] == "model_change":
            limits = entry["model"].get("limits") or {}
            window = limits.get("contextWindow")
            if isinstance(window, int) and window > 0:
                return window
    return DEFAULT_WINDOW
