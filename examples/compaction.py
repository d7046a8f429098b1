"""Compaction by hand: decide with a trigger, summarize, append, rebuild.

Run: .venv/bin/python examples/compaction.py
"""

from __future__ import annotations

import anyio

from prism import CompactionOptions, create_memory_session_store
from prism.branching import rebuild_session_context
from prism.compaction import (
    CompactionContext,
    ShouldCompactContext,
    create_default_compaction_strategy,
    resolve_should_compact,
)
from prism.contracts import SessionEntry
from prism.security import create_redactor

API_KEY = "sk-example-not-a-real-key-123"


def turn(i: int, role: str, text: str) -> SessionEntry:
    return {
        "id": f"e{i}",
        "sessionId": "s1",
        "parentId": f"e{i - 1}" if i > 1 else None,
        "kind": "message",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},  # type: ignore[typeddict-item]
    }


async def main() -> None:
    store = create_memory_session_store()
    await store.append_many(
        [
            turn(1, "user", f"Deploy with key {API_KEY}"),
            turn(2, "assistant", "Deployed."),
            turn(3, "user", "Now roll back."),
            turn(4, "assistant", "Rolled back."),
            turn(5, "user", "Status?"),
        ]
    )
    entries = await store.list("s1")

    options = CompactionOptions(
        trigger={"type": "threshold_entries", "entries": 4}, keep_recent_entries=2
    )
    decide = ShouldCompactContext(session_id="s1", entries=entries)
    print("should compact:", await resolve_should_compact(options, decide))

    strategy = create_default_compaction_strategy(keep_recent_entries=2)
    redactor = create_redactor([API_KEY])  # an agent's is agent.config.redactor
    result = await strategy.compact(
        CompactionContext(session_id="s1", entries=entries, redactor=redactor)
    )
    await store.append_many(result.entries)
    print("summary:")
    print(result.summary)
    print("data:", result.entries[0]["data"])  # type: ignore[typeddict-item]

    after = await store.list("s1")
    context = rebuild_session_context(after, after[-1]["id"])
    print("raw branch kept:", len(context.entries), "entries")
    print("provider messages:", [m["content"][0]["text"] for m in context.messages])  # type: ignore[typeddict-item]
    print(
        "again right after:",
        await resolve_should_compact(options, ShouldCompactContext(session_id="s1", entries=after)),
    )


if __name__ == "__main__":
    anyio.run(main)
