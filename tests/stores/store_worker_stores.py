"""Subprocess body for the reliability tests: append entries and ack each.

usage: store_worker_stores.py KIND PATH WRITER COUNT
Prints ``ack <id>`` (flushed) only after the append that wrote <id> returned,
so every printed id is an acknowledged entry. Every fourth append is a batch
of three entries to exercise batch atomicity too.
"""

from __future__ import annotations

import sys

import anyio

from prism.stores import create_jsonl_session_store, create_sqlite_session_store


def entry(writer: int, i: int) -> dict[str, object]:
    return {
        "id": f"w{writer}-{i}",
        "sessionId": f"session-{i % 3}",
        "parentId": None,
        "kind": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": f"writer {writer} entry {i} " + "x" * (i % 200)}],
        },
    }


async def main(kind: str, path: str, writer: int, count: int) -> None:
    store = (
        create_jsonl_session_store(path) if kind == "jsonl" else create_sqlite_session_store(path)
    )
    out = sys.stdout
    i = 0
    while i < count:
        if i % 4 == 3 and i + 3 <= count:
            batch = [entry(writer, i + k) for k in range(3)]
            await store.append_many(batch)  # type: ignore[arg-type]
            out.write("".join(f"ack {e['id']}\n" for e in batch))
            i += 3
        else:
            await store.append(entry(writer, i))  # type: ignore[arg-type]
            out.write(f"ack w{writer}-{i}\n")
            i += 1
        out.flush()
    out.write("done\n")
    out.flush()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
