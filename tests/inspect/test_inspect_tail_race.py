"""The follow tail against a writer that appends between its two reads.

The tail asks the store for the last entry id, then reads the entries; a
writer in another process can append in between. Those entries go out with
this poll, so the next poll must continue after them, not after the id read
first (that sent them twice: found under load in the subprocess tail test).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prism.inspect import open_source
from prism.inspect.app import InspectorApp
from prism.security import NOOP_REDACTOR
from prism.stores import create_jsonl_session_store

pytestmark = pytest.mark.anyio


def _tick(entry_id: str, parent: str | None) -> dict[str, Any]:
    return {
        "id": entry_id,
        "sessionId": "s",
        "parentId": parent,
        "kind": "custom",
        "customType": "test.tick",
        "data": {},
    }


@dataclass
class _RacingSource:
    """A real JSONL source whose writer appends right after each
    ``last_entry_id`` read, until it has written ``count`` entries."""

    inner: Any
    path: Path
    count: int
    written: int = 0

    async def last_entry_id(self, session_id: str) -> str | None:
        last = await self.inner.last_entry_id(session_id)
        if self.written < self.count:
            writer = create_jsonl_session_store(str(self.path))
            await writer.append(_tick(f"w{self.written}", last))
            self.written += 1
        return last

    async def entries(self, session_id: str) -> list[Any]:
        return list(await self.inner.entries(session_id))


async def test_entries_written_between_the_two_reads_are_sent_once(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    store = create_jsonl_session_store(str(path))
    await store.append(_tick("first", None))
    source = await open_source(str(path))
    racing = _RacingSource(source, path, count=4)
    app = InspectorApp(source, redactor=NOOP_REDACTOR, poll_seconds=0)
    app.source = racing  # type: ignore[assignment]
    sent: list[str] = []
    events = app._tail_events("s", "first")
    async for item in events:
        if item is not None:
            sent.append(item[1]["id"])
        if racing.written == racing.count and sent and sent[-1] == "w3":
            break
    await events.aclose()  # type: ignore[attr-defined]
    await source.aclose()
    assert sent == ["w0", "w1", "w2", "w3"]
