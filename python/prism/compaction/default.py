"""The default compaction strategy: a conservative, provider-free text summary.

It keeps the newest ``keep_recent_entries`` message entries as raw provider
context and folds everything older on the branch into one summary: user and
assistant text, earlier summaries, model changes, labels, and tool calls /
results by name only (never their arguments or values). Thinking, system
messages, metadata and custom entries are left out. Exact known secrets are
redacted before the summary is capped, so a cap can never leave half a secret.
O(n) over the branch; raw entries are never touched.
"""

from __future__ import annotations

from typing import Any

from prism.compaction.options import (
    DEFAULT_KEEP_RECENT_ENTRIES,
    DEFAULT_MAX_SUMMARY_CHARS,
    DEFAULT_STRATEGY_NAME,
    CompactionContext,
    CompactionResult,
    _check_count,
    compaction_entry_data,
    is_compaction_entry_data,
)
from prism.contracts import CompactionEntry, SessionEntry
from prism.errors import ConfigError

TRUNCATION_MARKER = "[earlier history truncated]"


class DefaultCompactionStrategy:
    """Built by :func:`create_default_compaction_strategy`."""

    __slots__ = ("keep_recent_entries", "max_summary_chars", "name")

    def __init__(
        self,
        *,
        name: str = DEFAULT_STRATEGY_NAME,
        keep_recent_entries: int = DEFAULT_KEEP_RECENT_ENTRIES,
        max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("compaction strategy name must be a non-empty string")
        _check_count("keep_recent_entries", keep_recent_entries, 0)
        _check_count("max_summary_chars", max_summary_chars, 1)
        self.name = name
        self.keep_recent_entries = keep_recent_entries
        self.max_summary_chars = max_summary_chars

    async def compact(self, context: CompactionContext) -> CompactionResult:
        entries = list(context.entries)
        keep = _pick(
            context.keep_recent_entries, self.keep_recent_entries, "keep_recent_entries", 0
        )
        cap = _pick(context.max_summary_chars, self.max_summary_chars, "max_summary_chars", 1)
        live, previous = _live_region(entries)
        message_ids = [e["id"] for e in live if e["kind"] == "message"]
        keep_ids = message_ids[len(message_ids) - keep :] if keep else []
        kept = set(keep_ids)
        first_kept = next((i for i, e in enumerate(live) if e["id"] in kept), len(live))
        older = live[:first_kept]
        through = older[-1]["id"] if older else _through_of(previous)

        lines: list[str] = []
        if previous is not None and previous["summary"]:
            lines.append(previous["summary"])
        for item in older:
            lines.extend(_lines_of(item))
        redactor = context.redactor  # the agent's: the one redactor of the run
        summary = _cap_lines([redactor.redact_text(line) for line in lines], cap)

        entry = context.compaction_entry(
            summary,
            compaction_entry_data(
                through_entry_id=through,
                keep_entry_ids=keep_ids,
                strategy=self.name,
                trigger=context.trigger,
            ),
        )
        return CompactionResult(summary=summary, entries=[entry])

    def __repr__(self) -> str:  # never shows secrets
        return (
            f"DefaultCompactionStrategy(name={self.name!r}, keep_recent_entries="
            f"{self.keep_recent_entries}, max_summary_chars={self.max_summary_chars})"
        )


def create_default_compaction_strategy(
    name: str = DEFAULT_STRATEGY_NAME,
    keep_recent_entries: int = DEFAULT_KEEP_RECENT_ENTRIES,
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS,
) -> DefaultCompactionStrategy:
    """The provider-free default strategy. Invalid options raise ConfigError."""
    return DefaultCompactionStrategy(
        name=name,
        keep_recent_entries=keep_recent_entries,
        max_summary_chars=max_summary_chars,
    )


# --- helpers ---------------------------------------------------------------------


def _pick(override: int | None, default: int, name: str, minimum: int) -> int:
    if override is None:
        return default
    _check_count(name, override, minimum)
    return override


def _live_region(
    entries: list[SessionEntry],
) -> tuple[list[SessionEntry], CompactionEntry | None]:
    """Entries the current provider context is built from: after the latest
    compaction, plus the messages it kept. Returns them with that compaction."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry["kind"] == "compaction" and is_compaction_entry_data(entry.get("data")):
            kept = set(entry["data"]["keepEntryIds"])
            carried = [e for e in entries[:index] if e["id"] in kept]
            return carried + entries[index + 1 :], entry
    return entries, None


def _through_of(previous: CompactionEntry | None) -> str | None:
    return None if previous is None else previous["data"]["throughEntryId"]


def _lines_of(entry: SessionEntry) -> list[str]:
    kind = entry["kind"]
    if kind == "message":
        return _message_lines(entry.get("message"))
    if kind == "summary":
        text = entry.get("summary")
        return [f"summary: {text}"] if isinstance(text, str) and text else []
    if kind == "model_change":
        model: Any = entry.get("model") or {}
        return [f"model: {model.get('provider', '?')}/{model.get('model', '?')}"]
    if kind == "label":
        return [f"label: {entry.get('label', '')}"]
    if kind == "compaction":  # an older compaction inside the live region
        text = entry.get("summary")
        return [f"summary: {text}"] if isinstance(text, str) and text else []
    return []  # custom entries carry host data: never summarized


def _message_lines(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    if role not in ("user", "assistant", "tool"):
        return []  # system prompts are rebuilt, not summarized
    texts: list[str] = []
    lines: list[str] = []
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image":
            texts.append("[image]")
        elif kind == "tool_call":
            lines.append(f"tool call: {block.get('name', '?')} [{block.get('id', '?')}]")
        elif kind == "tool_result":
            failed = " (error)" if block.get("isError") else ""
            lines.append(
                f"tool result: {block.get('name', '?')} [{block.get('toolCallId', '?')}]{failed}"
            )
    text = " ".join(t for t in texts if t).strip()
    if text and role != "tool":
        lines.insert(0, f"{role}: {text}")
    return lines


def _cap_lines(lines: list[str], cap: int) -> str:
    """Join lines, keeping the newest ones when the total exceeds ``cap``."""
    summary = "\n".join(lines)
    if len(summary) <= cap:
        return summary
    budget = cap - len(TRUNCATION_MARKER) - 1
    if budget <= 0:
        return summary[-cap:]
    tail = summary[-budget:]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]  # start on a whole line when one fits
    return f"{TRUNCATION_MARKER}\n{tail}"
