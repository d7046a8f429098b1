"""Properties of compile_attention on generated requests: the caller's data
is never written, call/result pairing survives, the estimate only goes down,
and the same groups object comes back exactly when nothing changed."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.attention.test_attention_parity import message
from tests.oracles import attention_oracle as oracle

from prism.attention import (
    AttentionBudgetError,
    compile_attention,
    create_attention_compiler,
    create_attention_sticky_frontier,
)
from prism.security import NOOP_REDACTOR

GROUP_FIELDS = ("instructions", "summaries", "history", "input", "attachments", "tool_results")


def _pairs(groups: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for name in ("history", "tool_results"):
        for m in groups.get(name, []):
            for b in m.get("content", []):
                if isinstance(b, dict) and b.get("type") in ("tool_call", "tool_result"):
                    out.append((b["type"], str(b.get("id", b.get("toolCallId")))))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(message(), max_size=8),
    in_flight=st.lists(message(), max_size=3),
    ratio=st.floats(0.05, 1.5),
    keep_last=st.integers(0, 2),
    keep_turns=st.integers(0, 2),
)
def test_compile_properties(
    history: list[Any], in_flight: list[Any], ratio: float, keep_last: int, keep_turns: int
) -> None:
    # Message ids and tool-call ids are the sticky keys; in a session they are
    # unique, and two rows sharing one would be re-applied together.
    for i, msg in enumerate([*history, *in_flight]):
        if "id" in msg:
            msg["id"] = f"m{i}"
        for b, blk in enumerate(msg["content"]):
            if isinstance(blk, dict) and blk.get("type") == "tool_result":
                blk["toolCallId"] = f"c{i}.{b}"
    groups = {"history": history, "tool_results": in_flight}
    before = copy.deepcopy(groups)
    used = oracle.plan(
        [[], [], history, [], [], in_flight], [False] * 6, [[], [], []], 1, 0.5, None, 0, 0, []
    )["used"]
    cap = max(1, round(used * ratio / 0.75))
    compiler = create_attention_compiler(
        {"maxInputTokens": cap, "keepLast": keep_last, "thinkingKeepTurns": keep_turns}
    )
    frontier = create_attention_sticky_frontier()
    try:
        out = compile_attention(compiler, groups, frontier=frontier, redactor=NOOP_REDACTOR)
    except AttentionBudgetError as error:
        assert error.used_after > 0.75 * cap
        assert groups == before and len(frontier) == 0
        return
    assert groups == before  # nothing the caller holds was written
    assert (out.groups is groups) == (not out.mutated)
    assert out.report.used_after <= out.report.used
    assert out.report.used_after <= 0.75 * cap or not out.mutated
    # Stripping and stubbing never remove a call or a result.
    assert _pairs(out.groups) == _pairs(groups)
    # Re-running with the frontier reproduces the same request (sticky).
    again = compile_attention(compiler, groups, frontier=frontier, redactor=NOOP_REDACTOR)
    assert again.groups == out.groups
