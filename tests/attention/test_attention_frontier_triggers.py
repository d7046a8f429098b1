from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism.attention import (
    AttentionBudgetError,
    AttentionReport,
    AttentionStickyFrontier,
    assert_compaction_trigger,
    create_attention_sticky_frontier,
    create_attention_truncation_trigger,
    is_attention_budget_error,
)
from prism.attention.frontier import _BoundedKeys
from prism.errors import PrismError


def test_frontier_bounded_newest_kept() -> None:
    f = create_attention_sticky_frontier()
    f.add(thinking=[f"t{i}" for i in range(300)], tool_call_ids=[f"c{i}" for i in range(300)])
    assert len(f.thinking) == 256 and len(f.tool_call_ids) == 256
    assert "t0" not in f.thinking and "t299" in f.thinking
    assert "c43" not in f.tool_call_ids and "c44" in f.tool_call_ids


def test_frontier_readd_refreshes() -> None:
    f = create_attention_sticky_frontier()
    f.add(tool_call_ids=["old"])
    f.add(tool_call_ids=[f"c{i}" for i in range(255)])
    f.add(tool_call_ids=["old"])  # re-applied: now newest
    f.add(tool_call_ids=["new"])
    assert "old" in f.tool_call_ids and "c0" not in f.tool_call_ids


def test_frontier_json_round_trip_and_malformed_dropped() -> None:
    f = create_attention_sticky_frontier()
    f.add(thinking=["k"], tool_call_ids=["a", "b"])
    assert f.to_json() == {"thinking": ["k"], "toolCallIds": ["a", "b"]}
    g = AttentionStickyFrontier.from_json(f.to_json())
    assert g.to_json() == f.to_json()
    bad = AttentionStickyFrontier.from_json(
        {"thinking": ["ok", 3, "", None, "x" * 513], "toolCallIds": "nope"}
    )
    assert bad.to_json() == {"thinking": ["ok"], "toolCallIds": []}
    assert len(AttentionStickyFrontier.from_json(None)) == 0
    assert len(AttentionStickyFrontier.from_json([1, 2])) == 0


def test_frontier_version_bumps() -> None:
    f = create_attention_sticky_frontier()
    v = f.version
    f.add(tool_call_ids=["a"])
    assert f.version == v + 1
    f.clear()
    assert len(f) == 0 and f.version == v + 2


def test_report_event_counts_only() -> None:
    r = AttentionReport(
        used=100,
        used_after=50,
        input_cap=120,
        trigger_ratio=0.75,
        dropped_thinking_turns=1,
        stubbed_tool_results=2,
        stubbed_bytes=300,
        truncated=True,
        run_id="r",
        session_id="s",
    )
    assert r.to_event() == {
        "type": "attention_compiled",
        "used": 100,
        "usedAfter": 50,
        "inputCap": 120,
        "triggerRatio": 0.75,
        "droppedThinkingTurns": 1,
        "stubbedToolResults": 2,
        "stubbedBytes": 300,
        "truncated": True,
        "sessionId": "s",
        "runId": "r",
    }


def test_budget_error() -> None:
    e = AttentionBudgetError(10, 9, 10, 0.75)
    assert e.code == "attention_budget_exceeded"
    assert isinstance(e, PrismError)
    assert is_attention_budget_error(e)
    assert not is_attention_budget_error(ValueError("x"))
    assert e.to_error_info()["code"] == "attention_budget_exceeded"
    assert "9 estimated tokens" in str(e)


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ({"type": "threshold_entries", "entries": 0}, "positive integer 'entries'"),
        ({"type": "threshold_entries"}, "positive integer 'entries'"),
        ({"type": "input_ratio", "ratio": 0}, r"'ratio' in \(0, 1\]"),
        ({"type": "input_ratio", "ratio": "0.9"}, r"'ratio' in \(0, 1\]"),
        ({"type": "custom", "should_compact": 3}, "callable 'should_compact'"),
        ({"type": "nope"}, "unknown compaction trigger type 'nope'"),
        ({}, "unknown compaction trigger type None"),
        ("input_ratio", "must be an object, got str"),
    ],
)
def test_assert_compaction_trigger(trigger: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        assert_compaction_trigger(trigger)


def test_assert_compaction_trigger_accepts() -> None:
    assert_compaction_trigger({"type": "threshold_entries", "entries": 3})
    assert_compaction_trigger({"type": "input_ratio", "ratio": 1})
    assert_compaction_trigger({"type": "custom", "shouldCompact": lambda ctx: True})


def compiled(truncated: bool) -> dict[str, object]:
    return {"type": "attention_compiled", "truncated": truncated}


def test_truncation_trigger_fires_once_per_armed_streak() -> None:
    t = create_attention_truncation_trigger(threshold=2)
    fire = t.trigger["should_compact"]
    assert t.trigger["type"] == "custom"
    assert_compaction_trigger(t.trigger)
    t.observe(compiled(True))
    assert t.streak() == 1 and fire({}) is False
    t.observe({"type": "message_delta"})  # ignored
    t.observe(compiled(True))
    assert t.streak() == 2
    assert fire({}) is True
    assert fire({}) is False  # once per streak
    t.observe(compiled(True))
    t.observe(compiled(True))
    assert fire({}) is True


def test_truncation_trigger_untruncated_turn_clears() -> None:
    t = create_attention_truncation_trigger(threshold=2)
    t.observe(compiled(True))
    t.observe(compiled(False))
    assert t.streak() == 0
    t.observe(compiled(True))
    t.observe(compiled(True))
    t.reset()
    assert t.streak() == 0 and t.trigger["should_compact"]({}) is False


@pytest.mark.parametrize("threshold", [0, -1, 1.5, True, "2"])
def test_truncation_trigger_threshold_validated(threshold: object) -> None:
    with pytest.raises(TypeError, match="threshold must be a positive integer"):
        create_attention_truncation_trigger(threshold=threshold)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=10), max_size=8), st.integers(1, 6))
def test_add_all_equals_adding_one_by_one(batches: list[list[str]], limit: int) -> None:
    fast, slow = _BoundedKeys(limit), _BoundedKeys(limit)
    for batch in batches:
        # Also replay the current order, the shape a sticky re-application has.
        for keys in (batch, [*fast, *batch]):
            fast.add_all(keys)
            for key in keys:
                slow.add(key)
            assert list(fast) == list(slow)
