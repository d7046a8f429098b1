"""The observational-memory example runs as documented."""

from __future__ import annotations

import re

from example_runner import run_example


def test_observational_memory_example() -> None:
    lines = run_example("observational_memory.py").stdout.splitlines()
    assert lines[0] == "flush: [('observer', 4), ('reflector', 1)]"
    assert re.fullmatch(r"record: om\.observations\.recorded covers entry_[0-9a-f]+", lines[1])
    assert re.fullmatch(r"record: om\.reflections\.recorded covers entry_[0-9a-f]+", lines[2])
    assert "key in the store: False | redacted: True" in lines
    summary = lines[lines.index("summary:") + 1 : lines.index("summary:") + 10]
    assert summary[0] == "Reflections (consolidated memory):"
    assert re.fullmatch(
        r"- \[[0-9a-f]{12}\] User said: Book with the agency key \[REDACTED\]\.", summary[7]
    )
    assert 'data.memory: {"type": "om.folded", "version": 1, "fullFold": false}' in lines
    assert "recall: reflection sources 4" in lines
    assert (
        "om:status: observations: 4 recorded, 0 dropped, 4 active, 4 visible; reflections: "
        "1 recorded, 1 visible; pool: 41/20000 tokens; workers: idle"
    ) in lines
    assert lines[-1] == "om:view everything: Usage: /om:view [full]"
