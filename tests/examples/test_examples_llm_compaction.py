"""examples/llm_compaction.py runs as documented (fresh interpreter)."""

from __future__ import annotations

from example_runner import run_example


def test_llm_compaction_example() -> None:
    lines = run_example("llm_compaction.py").stdout.splitlines()
    assert "manual compaction: llm-compaction manual" in lines
    assert "summary starts: ## Goal" in lines
    assert "split turn: True summary calls: 2" in lines
    assert "request messages: ['system', 'user']" in lines
    assert "maxTokens per call: [2184, 1092]" in lines
    assert "conversation tagged: True" in lines
    assert "secret sent: False" in lines
    assert "modified files: ['src/app.py']" in next(line for line in lines if "read files" in line)
    before, after = (
        next(line for line in lines if line.startswith("tokens before"))
        .split(": ")[1]
        .split(" -> ")
    )
    assert int(after) < int(before)
    compactions = next(line for line in lines if line.startswith("compactions:")).split()
    assert int(compactions[1]) >= 2 and int(compactions[3]) >= 1
    assert "latest summary starts: Keep the app working (update summary)." in lines
    assert "registered: ['llm-compaction'] calls at load: 0" in lines
    assert "same strategy: True" in lines
