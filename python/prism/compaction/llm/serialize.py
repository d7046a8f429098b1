"""Turn branch entries into the plain-text transcript a summary model reads.

Each message becomes labelled lines (``[User]:``, ``[Assistant]:``,
``[Assistant thinking]:``, ``[Assistant tool calls]:``, ``[Tool result]:``),
so the model sees a document to describe rather than a chat to continue.
Tool results and tool-call arguments longer than ``max_tool_result_chars``
are cut. Every known secret is masked by the native redactor: a part that is
cut is redacted *before* the cut (a cut through a secret would otherwise
leave its prefix behind) and the whole transcript is redacted once more at
the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from prism.contracts import Message, SessionEntry
from prism.errors import ConfigError
from prism.security.redaction import SecretRedactor, require_redactor

DEFAULT_MAX_TOOL_RESULT_CHARS = 2000
PART_SEPARATOR = "\n\n"


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters plus a marker saying how many went."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[... {len(text) - max_chars} more characters truncated]"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class _Writer:
    __slots__ = ("max_chars", "parts", "redactor")

    def __init__(self, max_chars: int, redactor: SecretRedactor) -> None:
        self.max_chars = max_chars
        self.redactor = redactor
        self.parts: list[str] = []

    def cut(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        # Redact first: the cut must never keep the head of a secret.
        return truncate_text(self.redactor.redact_text(text), self.max_chars)

    def message(self, message: Message) -> None:
        role = message.get("role")
        content = message.get("content") or ()
        if role == "user":
            text = _texts(content)
            if text:
                self.parts.append(f"[User]: {text}")
        elif role == "assistant":
            self._assistant(content)
        elif role == "tool":
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    label = "Tool error" if block.get("isError") else "Tool result"
                    name = block.get("name", "?")
                    self.parts.append(f"[{label} {name}]: {self.cut(_json(block.get('result')))}")
        # System messages are rebuilt for every request: never summarized.

    def _assistant(self, content: Iterable[Any]) -> None:
        thinking: list[str] = []
        texts: list[str] = []
        calls: list[str] = []
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("text"), str):
                thinking.append(block["text"])
            elif kind == "tool_call":
                arguments = block.get("arguments")
                shown = (
                    ", ".join(
                        f"{k}={self.cut(json.dumps(v, ensure_ascii=False, default=str))}"
                        for k, v in arguments.items()
                    )
                    if isinstance(arguments, Mapping)
                    else ""
                )
                calls.append(f"{block.get('name', '?')}({shown})")
        if thinking:
            self.parts.append("[Assistant thinking]: " + "\n".join(thinking))
        if texts:
            self.parts.append("[Assistant]: " + "\n".join(texts))
        if calls:
            self.parts.append("[Assistant tool calls]: " + "; ".join(calls))

    def entry(self, entry: Mapping[str, Any]) -> None:
        kind = entry.get("kind")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, Mapping):
                self.message(message)  # type: ignore[arg-type]
        elif kind in ("summary", "compaction"):
            text = entry.get("summary")
            if isinstance(text, str) and text:
                self.parts.append(f"[Earlier summary]: {text}")
        elif kind == "model_change":
            model = entry.get("model") or {}
            self.parts.append(
                f"[Model changed]: {model.get('provider', '?')}/{model.get('model', '?')}"
            )
        # Labels and custom entries carry host data, not conversation.


def _texts(content: Iterable[Any]) -> str:
    out: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif block.get("type") == "image":
            out.append("[image]")
    return "\n".join(out)


def check_max_tool_result_chars(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"max_tool_result_chars must be an integer >= 1, got {value!r}")
    return value


def serialize_compaction_parts(
    items: Iterable[SessionEntry | Message | Mapping[str, Any]],
    *,
    max_tool_result_chars: int,
    redactor: SecretRedactor,
) -> list[str]:
    """The transcript as separate parts (one per label), each already cut;
    the caller redacts the joined text. The strategy uses the parts to drop
    the oldest ones when a request would not fit the summary model."""
    writer = _Writer(max_tool_result_chars, redactor)
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"cannot serialize {type(item).__name__}: expected an entry or message")
        if "kind" in item:
            writer.entry(item)
        else:
            writer.message(item)  # type: ignore[arg-type]
    return writer.parts


def serialize_compaction_conversation(
    entries: Iterable[SessionEntry | Message | Mapping[str, Any]],
    *,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
    redactor: SecretRedactor,
) -> str:
    """The labelled, truncated, redacted transcript of ``entries`` (session
    entries or bare messages), masked with ``redactor`` (the agent's;
    ``NOOP_REDACTOR`` when there are no secrets)."""
    check_max_tool_result_chars(max_tool_result_chars)
    require_redactor(redactor, owner="serialize_compaction_conversation")
    parts = serialize_compaction_parts(
        entries, max_tool_result_chars=max_tool_result_chars, redactor=redactor
    )
    return redactor.redact_text(PART_SEPARATOR.join(parts))
