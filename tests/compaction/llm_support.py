"""Shared builders for the LLM compaction tests: branches of session entries
and a summary model (the mock provider) that records every request."""

from __future__ import annotations

import json
from typing import Any

from prism.compaction import CompactionContext
from prism.providers import create_mock_provider
from prism.providers.mock import MockProvider
from prism.security import NOOP_REDACTOR

SECRET = "sk-live-SECRET-4f1c2a9e7b"
SUMMARY_MODEL = {"provider": "mock", "model": "cheap-summary"}


class Branch:
    """Builds a linear branch: each entry's parent is the previous one."""

    def __init__(self, session_id: str = "s1") -> None:
        self.session_id = session_id
        self.entries: list[dict[str, Any]] = []

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry.setdefault("id", f"e{len(self.entries) + 1}")
        entry["sessionId"] = self.session_id
        entry["parentId"] = self.entries[-1]["id"] if self.entries else None
        self.entries.append(entry)
        return entry

    def message(self, role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
        return self._add({"kind": "message", "message": {"role": role, "content": list(blocks)}})

    def user(self, text: str) -> dict[str, Any]:
        return self.message("user", {"type": "text", "text": text})

    def assistant(self, text: str, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for call_id, name, arguments in calls:
            blocks.append(
                {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
            )
        return self.message("assistant", *blocks)

    def tool(self, call_id: str, name: str, result: Any, *, error: bool = False) -> dict[str, Any]:
        block: dict[str, Any] = {
            "type": "tool_result",
            "toolCallId": call_id,
            "name": name,
            "result": result,
        }
        if error:
            block["isError"] = True
        return self.message("tool", block)

    def compaction(self, summary: str, keep: list[str], **data: Any) -> dict[str, Any]:
        return self._add(
            {
                "kind": "compaction",
                "summary": summary,
                "data": {
                    "throughEntryId": None,
                    "keepEntryIds": keep,
                    "strategy": "llm-compaction",
                    "trigger": "manual",
                    **data,
                },
            }
        )

    def context(self, **overrides: Any) -> CompactionContext:
        overrides.setdefault("redactor", NOOP_REDACTOR)
        return CompactionContext(
            session_id=self.session_id, entries=list(self.entries), **overrides
        )


def summary_model(*texts: str) -> MockProvider:
    """A summary model answering each call with the next text (the last one repeats)."""
    answers = list(texts) or ["## Goal\nsummary"]
    calls = {"n": 0}

    def answer(request: Any) -> list[dict[str, Any]]:
        text = answers[min(calls["n"], len(answers) - 1)]
        calls["n"] += 1
        return [{"type": "content_delta", "text": text}, {"type": "done", "stopReason": "stop"}]

    return create_mock_provider(answer, name="summary")


def prompt_of(request: Any) -> str:
    """The user message text of a summary request."""
    return str(request["messages"][-1]["content"][0]["text"])


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
