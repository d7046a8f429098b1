"""Splitting a session's requests by kind reuses the running sums of its
previous request over their common prefix: the same figures as a full split
(growth, a trip rewriting a row, a compaction shortening the history,
sessions interleaved), for the cost of the new rows only."""

from __future__ import annotations

from typing import Any

import pytest

from prism.attention import calibration
from prism.attention.calibration import split_request_tokens

MODEL = {"provider": "p", "model": "m"}


def text(role: str, value: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": value}]}


def call(n: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_call", "id": f"c{n}", "name": "grep", "arguments": {"q": n}}],
    }


def result(n: int, payload: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "content": [
            {"type": "tool_result", "toolCallId": f"c{n}", "name": "grep", "result": payload}
        ],
    }


def full(messages: list[Any]) -> Any:
    return split_request_tokens({"model": MODEL, "messages": list(messages)})  # type: ignore[typeddict-item]


def in_session(session: str, messages: list[Any]) -> Any:
    request = {"model": MODEL, "messages": list(messages), "metadata": {"sessionId": session}}
    return split_request_tokens(request)  # type: ignore[arg-type]


class CountingMemo(calibration._SplitMemo):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def split(self, message: Any) -> tuple[int, int, int, int]:
        self.calls += 1
        return super().split(message)


def test_session_splits_equal_full_splits_and_measure_only_new_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingMemo()
    monkeypatch.setattr(calibration, "_MEMO", counting)
    history: list[Any] = [text("system", "rules"), text("user", "go")]
    other: list[Any] = [text("user", "elsewhere")]
    for n in range(6):
        history += [call(n), result(n, "x" * (500 + n))]
        before = counting.calls
        assert in_session("s1", history) == full(history)
        # After the first request, the session split touches only the two
        # new rows (the full split all of them).
        new_rows = len(history) if n == 0 else 2
        assert counting.calls - before == new_rows + len(history)
        other.append(text("assistant", f"reply {n}"))
        assert in_session("s2", other) == full(other)
    # A trip: an earlier row becomes a stub (a new object, other content).
    history[3] = result(0, "[omitted 500 bytes]")
    assert in_session("s1", history) == full(history)
    # A clone with equal content counts as the same row.
    history[4] = {**history[4]}
    assert in_session("s1", history) == full(history)
    # A compaction: a shorter history with a summary in front.
    compacted = [history[0], text("user", "summary of it all"), *history[-2:]]
    assert in_session("s1", compacted) == full(compacted)
    assert in_session("s1", history) == full(history)
