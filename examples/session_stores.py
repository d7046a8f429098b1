"""Durable sessions: the same entries in a JSONL file and in SQLite.

Run: .venv/bin/python examples/session_stores.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from prism import create_jsonl_session_store, create_sqlite_session_store
from prism.contracts import SessionEntry
from prism.errors import DuplicateEntryError
from prism.stores import read_jsonl_session_entries


def message(entry_id: str, parent: str | None, role: str, text: str) -> SessionEntry:
    return {
        "id": entry_id,
        "sessionId": "demo",
        "parentId": parent,
        "kind": "message",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},  # type: ignore[typeddict-item]
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions" / "demo.jsonl"
        store = create_jsonl_session_store(path)  # the directory is created on first append
        await store.append(message("e1", None, "user", "Hello"))
        await store.append_many(
            [message("e2", "e1", "assistant", "Hi! ☀"), message("e3", "e2", "user", "Bye")]
        )
        try:
            await store.append(message("e2", "e1", "assistant", "again"))
        except DuplicateEntryError as error:
            print("refused:", error)

        # A writer that died mid-line leaves a torn last line ...
        with path.open("ab") as fh:
            fh.write(b'{"id":"e4","sessionId":"demo","par')
        # ... which the next append closes off, then writes on a fresh line.
        await store.append(message("e5", "e3", "assistant", "See you"))
        entries, errors = await read_jsonl_session_entries(path)
        print("jsonl entries:", [e["id"] for e in entries])
        print("quarantined:", [(err["line"], err["reason"][:12]) for err in errors])

        async with create_sqlite_session_store(Path(tmp) / "sessions.db") as db:
            await db.append_many(entries)
            print("sqlite entries:", [e["id"] for e in await db.list("demo")])
            print("sqlite sessions:", await db.list_sessions())


if __name__ == "__main__":
    anyio.run(main)
