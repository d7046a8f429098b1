"""A session on a JSONL file survives a restart: a new agent resumes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_helpers import make_agent

from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.stores import create_jsonl_session_store, read_jsonl_session_entries

pytestmark = pytest.mark.anyio


async def test_resume_from_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    script = [
        [provider_tool_call("c1", "echo", {"x": 1}), provider_done()],
        [provider_text_delta("first"), provider_done()],
        [provider_text_delta("second"), provider_done()],
    ]
    first = make_agent(script, store=create_jsonl_session_store(path)).create_session("s1")
    await first.run("one")

    entries, errors = await read_jsonl_session_entries(path)
    assert errors == []
    assert [e["message"]["role"] for e in entries] == ["user", "assistant", "tool", "assistant"]

    # A fresh agent and store over the same file: the session continues where it was.
    second = make_agent(script[2:], store=create_jsonl_session_store(path))
    resumed = await second.open_session("s1")
    assert resumed.leaf_id == entries[-1]["id"]
    result = await resumed.run("two")
    assert result.text == "second"
    entries, errors = await read_jsonl_session_entries(path)
    assert errors == []
    assert len(entries) == 6
    assert entries[4]["parentId"] == entries[3]["id"]
