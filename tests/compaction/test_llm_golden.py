"""The exact summary request, pinned as a golden file: system prompt,
serialized conversation, previous summary, custom instructions, thinking
level and output budget. Regenerate after an intended change with
``PRISM_REGEN_GOLDEN=1 pytest tests/compaction/test_llm_golden.py`` and
review the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.compaction.llm_support import SECRET, SUMMARY_MODEL, Branch, summary_model

from prism.compaction.llm import create_llm_compaction_strategy
from prism.security import create_redactor

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden"


def golden_branch() -> Branch:
    b = Branch("golden")
    b.compaction("## Goal\nShip the parser.", [])
    b.user(f"The parser fails on empty lines. My token is {SECRET}.")
    b.message(
        "assistant",
        {"type": "thinking", "text": "Check the reader first."},
        {"type": "text", "text": "Reading the parser."},
        {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "src/parser.py"}},
    )
    b.tool("c1", "read", "def parse(line):\n    return line.split()\n" + "# padding\n" * 300)
    b.assistant(
        "", ("c2", "edit", {"path": "src/parser.py", "old": "split()", "new": "split() or []"})
    )
    b.tool("c2", "edit", {"ok": True, "diff": "-split()\n+split() or []"})
    b.assistant("Fixed: empty lines now parse to [].")
    b.user("Now add a regression test. " + "context " * 600)
    b.assistant(
        "", ("c3", "write", {"path": "tests/test_parser.py", "content": "def test_empty(): ..."})
    )
    b.tool("c3", "write", {"ok": True})
    b.assistant("Added tests/test_parser.py.")
    return b


def check_golden(name: str, value: Any) -> None:
    path = GOLDEN / name
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    if os.environ.get("PRISM_REGEN_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; see the module docstring"


async def test_the_summary_request_matches_the_golden_file() -> None:
    model = summary_model("## Goal\nShip the parser.\n\n## Progress\n- [x] fixed empty lines")
    strategy = create_llm_compaction_strategy(
        provider=model,
        model=SUMMARY_MODEL,
        keep_recent_tokens=700,
        max_summary_tokens=1200,
        max_tool_result_chars=120,
        custom_instructions="Keep the failing input verbatim.",
        thinking_level="medium",
        provider_options={"cacheRetention": "short"},
    )
    result = await strategy.compact(golden_branch().context(redactor=create_redactor([SECRET])))
    (request,) = model.requests
    check_golden("llm_summary_request.json", request)
    entry = dict(result.entries[0])
    entry.pop("id")
    entry.pop("createdAt")
    check_golden("llm_compaction_entry.json", entry)
    assert SECRET not in json.dumps([request, entry])
