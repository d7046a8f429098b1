"""The attention benchmark's per-bust explanation: which rows of the
previous request changed, split into new stubs and new thinking strips."""

from __future__ import annotations

from typing import Any

from prism._bench.attention.scenario import explain_bust

STUB = "Tool result read [c1]: omitted 900 bytes (sha256 " + "0" * 32 + ")"


def _asst(thinking: bool) -> dict[str, Any]:
    content: list[Any] = [{"type": "text", "text": "t"}]
    if thinking:
        content.insert(0, {"type": "thinking", "text": "hmm"})
    return {"role": "assistant", "content": content}


def _tool(result: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "toolCallId": "c1", "name": "read", "result": result}
    return {"role": "tool", "content": [block]}


def test_explains_stubs_strips_and_other_changes() -> None:
    before = [[], _asst(True), _tool("x" * 900), _asst(True), {"role": "user", "content": "a"}]
    after = [[], _asst(True), _tool(STUB), _asst(False), {"role": "user", "content": "b"}, _tool(1)]
    detail = explain_bust(7, before, after, 2, 1234)
    assert detail == {
        "request": 7,
        "run": 3,
        "firstChangedRow": 2,
        "firstChangedRole": "tool",
        "newStubs": 1,
        "newThinkingStrips": 1,
        "otherChangedRows": 1,
        "cause": "stubs+thinking+other",
        "rewrittenTokens": 1234,
    }
    only_strip = explain_bust(1, before, [*before[:3], _asst(False)], 3, 5)
    assert only_strip["cause"] == "thinking" and only_strip["firstChangedRole"] == "assistant"
