"""compile_attention: stage order, protections, pairing, clone semantics,
sticky re-application, hysteresis, incremental cache and the budget error."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

import pytest

from prism._native import Redactor
from prism.assembly.groups import MessageGroups
from prism.attention import (
    AttentionBudgetError,
    AttentionStickyFrontier,
    compile_attention,
    create_attention_compiler,
    create_attention_measure_cache,
    create_attention_sticky_frontier,
)
from prism.security import NOOP_REDACTOR

PAYLOAD = "x" * 4000
STUB = re.compile(
    r"^Tool result (?P<name>.+) \[(?P<id>.+)\]: omitted (?P<bytes>\d+) bytes "
    r"\(sha256 (?P<hex>[0-9a-f]{32})\)$"
)


def assistant(i: int, *, thinking: bool = True, name: str = "read") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking:
        content.append({"type": "thinking", "text": f"plan {i} " + "t" * 400})
    content.append({"type": "tool_call", "id": f"c{i}", "name": name, "arguments": {"i": i}})
    return {"role": "assistant", "content": content}


def result(i: int, payload: Any = PAYLOAD, name: str = "read", **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "toolCallId": f"c{i}", "name": name, "result": payload}
    return {"role": "tool", "content": [{**block, **extra}]}


def history(n: int, **kw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [assistant(i), result(i, **kw)]
    return out


def groups_of(hist: list[dict[str, Any]], **kw: Any) -> MessageGroups:
    return MessageGroups(
        instructions=[{"role": "system", "content": [{"type": "text", "text": "be brief"}]}],
        history=hist,
        input=[{"role": "user", "content": [{"type": "text", "text": "go"}]}],
        **kw,
    )


def compiler(cap: int, **options: Any) -> Any:
    return create_attention_compiler({"maxInputTokens": cap, **options})


def test_under_ratio_returns_same_object_and_no_mutation() -> None:
    g = groups_of(history(3))
    out = compile_attention(compiler(1_000_000), g, redactor=NOOP_REDACTOR)
    assert out.groups is g and out.mutated is False
    assert out.report.used == out.report.used_after > 0
    groups, mutated, report = out  # tuple form
    assert groups is g and not mutated and report is out.report


def test_thinking_first_oldest_first_then_tools() -> None:
    hist = history(6)
    g = groups_of(hist)
    used = compile_attention(compiler(10**9), g, redactor=NOOP_REDACTOR).report.used
    # Room for stripping four thinking turns but not five: stage 2 never runs.
    per_turn = (len("plan 0 ") + 400 + 3) // 4
    cap = int((used - 4.5 * per_turn) / 0.75)
    # The reference policy stops as soon as the request is under the ratio.
    out = compile_attention(
        compiler(cap, keepLast=0, policy="reference"), g, redactor=NOOP_REDACTOR
    )
    assert out.mutated and out.report.dropped_thinking_turns == 5
    assert out.report.stubbed_tool_results == 0
    kinds = [[b["type"] for b in m["content"]] for m in out.groups.history[::2]]
    assert kinds[:5] == [["tool_call"]] * 5 and kinds[5] == ["thinking", "tool_call"]


def test_stage_two_stubs_oldest_beyond_keep_last() -> None:
    g = groups_of(history(6))
    out = compile_attention(
        compiler(4000, keepLast=2, thinkingKeepTurns=1), g, redactor=NOOP_REDACTOR
    )
    stubbed = [
        i for i, m in enumerate(out.groups.history[1::2]) if m["content"][0]["result"] != PAYLOAD
    ]
    assert stubbed == list(range(len(stubbed))) and 0 < len(stubbed) <= 4
    assert out.report.stubbed_tool_results == len(stubbed)
    assert out.report.used_after <= 0.75 * 4000
    # The newest thinking turn is kept.
    assert out.groups.history[-2]["content"][0]["type"] == "thinking"


def test_stub_text_and_digest_of_redacted_payload() -> None:
    secret = "sk-live-abcdef123456"
    payload = {"body": f"token={secret} " + "z" * 3000}
    g = groups_of([assistant(1), result(1, payload=payload)])
    redactor = Redactor([secret])
    out = compile_attention(compiler(500, keepLast=0, thinkingKeepTurns=0), g, redactor=redactor)
    text = out.groups.history[1]["content"][0]["result"]
    m = STUB.match(text)
    assert m is not None, text
    redacted = json.dumps(
        redactor.redact_value(payload), separators=(",", ":"), ensure_ascii=False
    ).encode()
    assert m["name"] == "read" and m["id"] == "c1"
    assert int(m["bytes"]) == len(redacted)
    assert m["hex"] == hashlib.sha256(redacted).hexdigest()[:32]
    assert secret not in text
    assert out.report.stubbed_bytes == len(redacted) - len(text.encode())


@pytest.mark.parametrize(
    "protect",
    [
        {"name": "pay"},
        {"isError": True},
        {"metadata": {"approval": {"id": "a"}}},
        {"metadata": {"approvalId": "a"}},
        {"metadata": {"prismApproval": 1}},
        {"metadata": {"decision": "yes"}},
        {"metadata": {"decisions": []}},
        {"metadata": {"pendingDecisions": []}},
        {"metadata": {"elicitation": {}}},
    ],
)
def test_never_stubbed_rows_raise_budget_error(protect: dict[str, Any]) -> None:
    name = protect.pop("name", "read")
    g = groups_of([assistant(1, name=name), result(1, name=name, **protect)])
    with pytest.raises(AttentionBudgetError) as info:
        compile_attention(
            compiler(500, keepLast=0, excludeTools=["pay"]), g, redactor=NOOP_REDACTOR
        )
    assert info.value.code == "attention_budget_exceeded"
    assert g.history[1]["content"][0]["result"] == PAYLOAD


def test_message_level_approval_metadata_protects() -> None:
    msg = result(1)
    msg["metadata"] = {"pendingDecisions": ["x"]}
    g = groups_of([assistant(1), msg])
    with pytest.raises(AttentionBudgetError):
        compile_attention(compiler(500, keepLast=0), g, redactor=NOOP_REDACTOR)


def test_stub_costlier_than_payload_is_left_alone() -> None:
    hist = [assistant(1, thinking=False), result(1, payload="tiny")]
    hist += [assistant(2, thinking=False), result(2)]
    out = compile_attention(compiler(400, keepLast=0), groups_of(hist), redactor=NOOP_REDACTOR)
    assert out.groups.history[1]["content"][0]["result"] == "tiny"
    assert out.groups.history[3]["content"][0]["result"] != PAYLOAD


def test_pairing_no_orphaned_call_ids() -> None:
    g = groups_of(history(8), tool_results=[result(99)])
    g.history.append(assistant(99))
    out = compile_attention(compiler(2500, keepLast=1), g, redactor=NOOP_REDACTOR)
    assert out.mutated
    msgs = out.groups.history + out.groups.tool_results
    calls = {b["id"] for m in msgs for b in m["content"] if b["type"] == "tool_call"}
    results = {b["toolCallId"] for m in msgs for b in m["content"] if b["type"] == "tool_result"}
    assert calls == results


def test_in_flight_tool_results_are_stubbed_after_history() -> None:
    g = groups_of(history(2), tool_results=[result(50), result(51)])
    out = compile_attention(
        compiler(1600, keepLast=1, thinkingKeepTurns=0), g, redactor=NOOP_REDACTOR
    )
    stubbed = [
        m["content"][0]["toolCallId"]
        for m in out.groups.history[1::2] + out.groups.tool_results
        if m["content"][0]["result"] != PAYLOAD
    ]
    assert stubbed == ["c0", "c1", "c50"]
    assert out.groups.tool_results[1]["content"][0]["result"] == PAYLOAD


def test_clone_semantics_caller_untouched() -> None:
    hist = history(5)
    g = groups_of(hist)
    before = copy.deepcopy(g)
    hist_list = g.history
    out = compile_attention(compiler(2000, keepLast=1), g, redactor=NOOP_REDACTOR)
    assert out.mutated and out.groups is not g
    assert g == before and g.history is hist_list
    assert out.groups.history is not g.history
    assert out.groups.input is g.input and out.groups.instructions is g.instructions
    # Unmutated rows are shared, mutated ones are new dicts.
    assert out.groups.history[-1] is g.history[-1]
    assert out.groups.history[1] is not g.history[1]


def test_mapping_groups_supported() -> None:
    g = {"history": history(4), "input": []}
    out = compile_attention(compiler(2000, keepLast=1), g, redactor=NOOP_REDACTOR)
    assert (
        out.mutated and isinstance(out.groups, dict) and g["history"] is not out.groups["history"]
    )


def test_sticky_reapplied_under_ratio_and_counted_again() -> None:
    frontier = create_attention_sticky_frontier()
    hist = history(4)
    c = compiler(2000, keepLast=1)
    first = compile_attention(c, groups_of(hist), frontier=frontier, redactor=NOOP_REDACTOR)
    assert first.mutated and len(frontier.tool_call_ids) == first.report.stubbed_tool_results
    # A much bigger cap: no gate, but the frontier rows stay shrunk.
    roomy = compiler(10**7, keepLast=1)
    again = compile_attention(roomy, groups_of(hist), frontier=frontier, redactor=NOOP_REDACTOR)
    assert again.mutated
    assert again.report.stubbed_tool_results == first.report.stubbed_tool_results
    assert again.report.dropped_thinking_turns == first.report.dropped_thinking_turns
    assert again.groups.history == first.groups.history
    assert not again.report.truncated
    # Without a frontier the same call is a no-op.
    assert compile_attention(roomy, groups_of(hist), redactor=NOOP_REDACTOR).mutated is False


def test_sticky_frontier_round_trip_keeps_stubs() -> None:
    frontier = create_attention_sticky_frontier()
    hist = history(4)
    first = compile_attention(
        compiler(2000, keepLast=1), groups_of(hist), frontier=frontier, redactor=NOOP_REDACTOR
    )
    restored = AttentionStickyFrontier.from_json(json.loads(json.dumps(frontier.to_json())))
    again = compile_attention(
        compiler(10**7), groups_of(hist), frontier=restored, redactor=NOOP_REDACTOR
    )
    assert again.groups.history == first.groups.history


def test_budget_error_leaves_frontier_untouched() -> None:
    frontier = create_attention_sticky_frontier()
    g = groups_of([assistant(1), result(1, isError=True)])
    with pytest.raises(AttentionBudgetError) as info:
        compile_attention(compiler(300, keepLast=0), g, frontier=frontier, redactor=NOOP_REDACTOR)
    assert len(frontier) == 0
    assert info.value.used_after > 0.75 * 300 and info.value.input_cap == 300


def test_truncated_when_stopped_with_eligible_rows_left() -> None:
    g = groups_of(history(8))
    used = compile_attention(compiler(10**9), g, redactor=NOOP_REDACTOR).report.used
    out = compile_attention(
        compiler(int(used / 0.75) - 10, keepLast=1, policy="reference"), g, redactor=NOOP_REDACTOR
    )
    assert out.mutated and out.report.truncated
    assert out.report.dropped_thinking_turns == 1


def test_hysteresis_shrinks_to_target() -> None:
    g = groups_of(history(10))
    plain = compile_attention(
        compiler(6000, keepLast=1, policy="reference"), g, redactor=NOOP_REDACTOR
    )
    hyst = compile_attention(compiler(6000, keepLast=1, targetRatio=0.4), g, redactor=NOOP_REDACTOR)
    assert hyst.report.used_after <= 0.4 * 6000 < plain.report.used_after
    assert hyst.report.stubbed_tool_results > plain.report.stubbed_tool_results


def test_raw_options_need_a_model() -> None:
    g = groups_of(history(2))
    model = {"provider": "p", "model": "m", "limits": {"contextWindow": 200_000}}
    assert (
        compile_attention({"keepLast": 1}, g, model=model, redactor=NOOP_REDACTOR).mutated is False
    )
    with pytest.raises(TypeError, match="input cap needs"):
        compile_attention({"keepLast": 1}, g, redactor=NOOP_REDACTOR)


def test_context_skills_tools_are_measured() -> None:
    g = groups_of(history(1))
    base = compile_attention(compiler(10**9), g, redactor=NOOP_REDACTOR).report.used
    tools = [{"name": "read", "description": "d" * 400}]
    ctx = [{"name": "notes", "text": "n" * 400}]
    more = compile_attention(
        compiler(10**9), g, tools=tools, context=ctx, redactor=NOOP_REDACTOR
    ).report.used
    assert more - base >= 200


def test_incremental_cache_reuses_rows() -> None:
    hist = history(10)
    c = compiler(10**9, incremental=True)
    cache = create_attention_measure_cache()
    first = compile_attention(c, groups_of(hist), measure_cache=cache, redactor=NOOP_REDACTOR)
    hits, misses = cache.stats()
    assert hits == 0 and misses == len(hist) + 2
    hist += [assistant(10), result(10)]
    second = compile_attention(c, groups_of(hist), measure_cache=cache, redactor=NOOP_REDACTOR)
    hits2, misses2 = cache.stats()
    assert misses2 - misses == 2 + 2  # two new rows; input/instructions are new objects
    assert hits2 == 20
    fresh = compile_attention(compiler(10**9), groups_of(hist), redactor=NOOP_REDACTOR).report.used
    assert second.report.used == fresh > first.report.used


def test_incremental_cache_remeasures_replaced_messages() -> None:
    hist = history(3)
    c = compiler(10**9, incremental=True)
    frontier = create_attention_sticky_frontier()
    g = groups_of(hist)
    compile_attention(c, g, frontier=frontier, redactor=NOOP_REDACTOR)
    hist[1] = {"role": "tool", "content": [{"type": "text", "text": "short"}]}
    hist.pop()  # and a shorter history
    again = compile_attention(c, g, frontier=frontier, redactor=NOOP_REDACTOR)
    assert (
        again.report.used
        == compile_attention(compiler(10**9), g, redactor=NOOP_REDACTOR).report.used
    )


def test_non_message_rows_fail_with_clear_error() -> None:
    with pytest.raises(TypeError, match="group 2 row 0 is not a message dict"):
        compile_attention(compiler(1000), MessageGroups(history=["nope"]), redactor=NOOP_REDACTOR)  # type: ignore[list-item]
    bad = [{"role": "tool", "content": [{"type": "tool_result", "name": "r", "result": {1, 2}}]}]
    with pytest.raises(TypeError, match="not JSON serializable"):
        compile_attention(compiler(1000), MessageGroups(history=bad), redactor=NOOP_REDACTOR)
