"""Preparation: split the live branch into what gets summarized and what stays.

Pure and O(n) over the branch: one backward scan for the latest compaction,
one native token estimate per live entry (``prism._native``, the same
chars/4 rules the attention compiler uses), a backward walk for the cut
point and one pass over the summarized messages for file operations. No
provider call, no I/O; entries are never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prism import _native
from prism.compaction.llm.files import FileOperations, collect_entry_file_operations
from prism.compaction.options import CompactionContext, is_compaction_entry_data
from prism.contracts import Message, SessionEntry
from prism.errors import ConfigError

DEFAULT_KEEP_RECENT_TOKENS = 20_000


def estimate_text_tokens(text: str) -> int:
    """``ceil(characters / 4)`` (native)."""
    return _native.estimate_text_tokens(text)


def estimate_message_tokens(message: Message) -> int:
    """A message's estimate: 4 tokens of framing plus chars/4 per block (native)."""
    return _native.estimate_message_tokens(message)


def estimate_entry_tokens(entry: SessionEntry) -> int:
    """A session entry's estimate by kind (native): messages as above,
    summaries and compactions by their summary, other kinds 4 tokens."""
    return _native.estimate_entry_tokens(entry)


def check_token_budget(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"llm compaction option {name} must be an integer >= {minimum}, got {value!r}"
        )
    return value


def _role(entry: SessionEntry) -> str | None:
    if entry["kind"] != "message":
        return None
    role: str = entry["message"]["role"]
    return role


def _is_cut_point(entry: SessionEntry) -> bool:
    """Where kept history may start: a user or assistant message. Never a
    tool message, so a tool result always stays with the call before it
    (an assistant message that is kept keeps its results, which follow it)."""
    return _role(entry) in ("user", "assistant")


@dataclass(frozen=True, slots=True)
class LlmCompactionCutPoint:
    """Where to cut ``entries``: ``entries[first_kept_index:]`` stays raw.

    ``first_kept_index == len(entries)`` keeps nothing; ``0`` summarizes
    nothing. On a split turn, ``entries[turn_start_index:first_kept_index]``
    is the beginning of the turn the cut falls in (summarized separately);
    otherwise ``turn_start_index`` is -1. ``kept_tokens`` is the estimate of
    the kept suffix.
    """

    first_kept_index: int
    turn_start_index: int
    is_split_turn: bool
    kept_tokens: int


def find_llm_compaction_cut_point(
    entries: Sequence[SessionEntry],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    token_counts: Sequence[int] | None = None,
) -> LlmCompactionCutPoint:
    """Walk back from the newest entry adding token estimates until
    ``keep_recent_tokens`` is reached, then cut at the nearest user/assistant
    message at or after that entry (if there is none, at the last one before
    it: a tool result never loses its call). When everything fits, nothing is
    cut. ``token_counts`` (one per entry) saves re-estimating."""
    check_token_budget("keep_recent_tokens", keep_recent_tokens)
    count = len(entries)
    if token_counts is None:
        token_counts = list(map(_native.estimate_entry_tokens, entries))
    elif len(token_counts) != count:
        raise ValueError(f"token_counts has {len(token_counts)} values for {count} entries")

    crossing = -1
    total = 0
    for index in range(count - 1, -1, -1):
        total += token_counts[index]
        if total >= keep_recent_tokens:
            crossing = index
            break

    if crossing < 0:
        cut = 0  # everything fits: keep it all
    else:
        cut = next((i for i in range(crossing, count) if _is_cut_point(entries[i])), -1)
        if cut < 0:
            cut = next((i for i in range(crossing - 1, -1, -1) if _is_cut_point(entries[i])), 0)

    turn_start = -1
    if 0 < cut < count and _role(entries[cut]) != "user":
        turn_start = next((i for i in range(cut - 1, -1, -1) if _role(entries[i]) == "user"), -1)
    kept = sum(token_counts[cut:])
    return LlmCompactionCutPoint(
        first_kept_index=cut,
        turn_start_index=turn_start,
        is_split_turn=turn_start >= 0,
        kept_tokens=kept,
    )


@dataclass(frozen=True, slots=True)
class LlmCompactionPreparation:
    """What one LLM compaction will do, before any provider call.

    ``history_entries`` are summarized with the previous summary (if any);
    ``turn_prefix_entries`` are the beginning of a split turn, summarized by
    a second call; ``kept_entries`` stay raw (their message ids become
    ``keepEntryIds``). ``file_operations`` is ``None`` when tracking is off.
    """

    session_id: str
    trigger: str
    previous_compaction: SessionEntry | None
    previous_summary: str | None
    history_entries: list[SessionEntry]
    turn_prefix_entries: list[SessionEntry]
    kept_entries: list[SessionEntry]
    first_kept_entry_id: str | None
    through_entry_id: str | None
    keep_entry_ids: list[str]
    is_split_turn: bool
    estimated_tokens_before: int
    kept_tokens: int
    file_operations: FileOperations | None

    @property
    def has_work(self) -> bool:
        """False when nothing would be summarized (the live branch fits in the budget)."""
        return bool(self.history_entries or self.turn_prefix_entries)

    def entry_data(
        self, *, strategy: str, estimated_tokens_after: int | None = None
    ) -> dict[str, Any]:
        """The compaction entry's ``data``: the core fields plus the LLM
        strategy's (camelCase, as the original writes them)."""
        data: dict[str, Any] = {
            "throughEntryId": self.through_entry_id,
            "keepEntryIds": list(self.keep_entry_ids),
            "strategy": strategy,
            "trigger": self.trigger,
            "firstKeptEntryId": self.first_kept_entry_id,
            "estimatedTokensBefore": self.estimated_tokens_before,
        }
        if estimated_tokens_after is not None:
            data["estimatedTokensAfter"] = estimated_tokens_after
        if self.is_split_turn:
            data["isSplitTurn"] = True
        if self.file_operations is not None:
            data["readFiles"] = self.file_operations.read_files
            data["modifiedFiles"] = self.file_operations.modified_files
        return data


def _live_region(entries: list[SessionEntry]) -> tuple[list[SessionEntry], SessionEntry | None]:
    """The entries today's provider context comes from: the messages the latest
    compaction kept, then everything after it. Returns them with that compaction."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry["kind"] == "compaction" and is_compaction_entry_data(entry.get("data")):
            return _carried(entries, index, entry) + entries[index + 1 :], entry
    return entries, None


def _carried(
    entries: list[SessionEntry], index: int, compaction: SessionEntry
) -> list[SessionEntry]:
    """The kept entries before the compaction at ``index``, in branch order.
    They sit just before it, so the walk back stops once all are found."""
    wanted = set(compaction["data"]["keepEntryIds"])  # type: ignore[typeddict-item]
    found: list[SessionEntry] = []
    for position in range(index - 1, -1, -1):
        if not wanted:
            break
        entry = entries[position]
        if entry["id"] in wanted:
            wanted.discard(entry["id"])
            found.append(entry)
    found.reverse()
    return found


def _newest_turn_cut(
    live: list[SessionEntry], counts: list[int], cut: LlmCompactionCutPoint
) -> LlmCompactionCutPoint:
    """The whole live branch fits the budget, yet a compaction was asked for
    (by hand, or by an entry-count trigger): keep the newest turn and summarize
    the turns before it. A branch of one turn stays as it is."""
    start = next((i for i in range(len(live) - 1, 0, -1) if _role(live[i]) == "user"), 0)
    if start == 0:
        return cut
    return LlmCompactionCutPoint(
        first_kept_index=start,
        turn_start_index=-1,
        is_split_turn=False,
        kept_tokens=sum(counts[start:]),
    )


def prepare_llm_compaction(
    context: CompactionContext | Sequence[SessionEntry],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    track_file_operations: bool = True,
) -> LlmCompactionPreparation:
    """Split ``context.entries`` (a branch, root first) for an LLM compaction.
    A bare entry list is accepted too (session id from its first entry,
    trigger ``"manual"``).

    The cut comes from :func:`find_llm_compaction_cut_point`. When the whole
    live branch fits ``keep_recent_tokens`` the newest turn is kept and the
    turns before it are summarized, since a compaction was asked for; only a
    single-turn branch has nothing to summarize (``has_work`` is False).
    Token counts are in the provider's tokens: each estimate is multiplied by
    ``context.token_scale`` (the agent's calibration; 1.0 without one)."""
    scale = 1.0
    if isinstance(context, CompactionContext):
        entries = list(context.entries)
        session_id, trigger = context.session_id, context.trigger
        scale = context.token_scale
    else:
        entries = list(context)
        session_id = entries[0]["sessionId"] if entries else ""
        trigger = "manual"
    check_token_budget("keep_recent_tokens", keep_recent_tokens)

    live, previous = _live_region(entries)
    counts = list(map(_native.estimate_entry_tokens, live))
    if scale != 1.0:
        counts = [round(count * scale) for count in counts]
    cut = find_llm_compaction_cut_point(
        live, keep_recent_tokens=keep_recent_tokens, token_counts=counts
    )
    if cut.first_kept_index == 0:
        cut = _newest_turn_cut(live, counts, cut)
    first = cut.first_kept_index
    history_end = cut.turn_start_index if cut.is_split_turn else first
    history = live[:history_end]
    prefix = live[history_end:first] if cut.is_split_turn else []
    kept = live[first:]

    previous_summary: str | None = None
    before = sum(counts)
    if previous is not None:
        previous_summary = previous.get("summary") or None  # type: ignore[assignment]
        before += _native.estimate_entry_tokens(previous)

    operations: FileOperations | None = None
    if track_file_operations:
        operations = FileOperations()
        if previous is not None:
            operations.add_previous(previous.get("data"))
        collect_entry_file_operations(live, first, operations)

    if first > 0:
        through: str | None = live[first - 1]["id"]
    elif previous is not None:
        through = previous["data"].get("throughEntryId")  # type: ignore[typeddict-item]
    else:
        through = None
    return LlmCompactionPreparation(
        session_id=session_id,
        trigger=trigger,
        previous_compaction=previous,
        previous_summary=previous_summary,
        history_entries=history,
        turn_prefix_entries=prefix,
        kept_entries=kept,
        first_kept_entry_id=kept[0]["id"] if kept else None,
        through_entry_id=through,
        keep_entry_ids=[e["id"] for e in kept if e["kind"] == "message"],
        is_split_turn=cut.is_split_turn,
        estimated_tokens_before=before,
        kept_tokens=cut.kept_tokens,
        file_operations=operations,
    )
