"""Trip policies: the deep default (nothing under the trigger, everything
eligible on a trip), the reference's stop-as-soon-as-under, the fixed
target override, and the opt-in proactive rule with its floor and its
pricing-derived ratio."""

from __future__ import annotations

from typing import Any

import pytest
from tests.attention.test_attention_compile import PAYLOAD, compiler, groups_of, history

from prism.assembly.groups import MessageGroups
from prism.attention import (
    AttentionCompilerOptions,
    AttentionConfigError,
    cache_multipliers,
    compile_attention,
    create_attention_compiler,
    create_attention_sticky_frontier,
    estimate_compiled_tokens,
    proactive_ratio,
)
from prism.security import NOOP_REDACTOR


def tool_boundary(hist: list[dict[str, Any]]) -> MessageGroups:
    """A request that ends with a tool result (no new user input)."""
    return MessageGroups(
        instructions=[{"role": "system", "content": [{"type": "text", "text": "be brief"}]}],
        history=hist,
    )


def measured(groups: Any) -> int:
    return compile_attention(compiler(10**9), groups, redactor=NOOP_REDACTOR).report.used


def stubbed_ids(groups: Any) -> list[str]:
    return [
        m["content"][0]["toolCallId"]
        for m in groups.history
        if m["role"] == "tool" and m["content"][0]["result"] != PAYLOAD
    ]


def test_default_policy_is_deep_and_changes_nothing_under_the_trigger() -> None:
    assert AttentionCompilerOptions().policy == "deep"
    g = groups_of(history(8))
    used = measured(g)
    out = compile_attention(compiler(int(used / 0.75) + 10, keepLast=1), g, redactor=NOOP_REDACTOR)
    assert out.groups is g and not out.mutated


def test_deep_trip_reduces_everything_eligible() -> None:
    g = groups_of(history(8))
    used = measured(g)
    cap = int(used / 0.75) - 10  # just over the trigger
    deep = compile_attention(compiler(cap, keepLast=1), g, redactor=NOOP_REDACTOR)
    ref = compile_attention(
        compiler(cap, keepLast=1, policy="reference"), g, redactor=NOOP_REDACTOR
    )
    # The reference stops once under the ratio, with rows left; deep does not.
    assert ref.report.truncated and not deep.report.truncated
    assert deep.report.dropped_thinking_turns == 7  # all but the newest
    assert deep.report.stubbed_tool_results == 7  # all but keep_last
    assert stubbed_ids(deep.groups) == [f"c{i}" for i in range(7)]
    assert deep.report.used_after == measured(deep.groups) < ref.report.used_after


def test_target_ratio_overrides_the_depth_of_a_deep_trip() -> None:
    g = groups_of(history(10))
    cap = int(measured(g) / 0.75) - 10
    fixed = compile_attention(compiler(cap, keepLast=1, targetRatio=0.4), g, redactor=NOOP_REDACTOR)
    deep = compile_attention(compiler(cap, keepLast=1), g, redactor=NOOP_REDACTOR)
    assert fixed.report.used_after <= 0.4 * cap and fixed.report.truncated
    assert deep.report.used_after < fixed.report.used_after


def test_deep_gate_trips_rarely_on_a_growing_session() -> None:
    """Growing a history turn by turn with one frontier: the deep policy
    trips once where the reference re-trips as each new result lands."""
    trips = {}
    for policy in ("deep", "reference"):
        frontier = create_attention_sticky_frontier()
        before = len(frontier)
        count = 0
        for n in range(4, 20):
            compile_attention(
                compiler(12_000, keepLast=1, policy=policy),
                groups_of(history(n)),
                frontier=frontier,
                redactor=NOOP_REDACTOR,
            )
            count += len(frontier) != before
            before = len(frontier)
        trips[policy] = count
    assert trips["deep"] < trips["reference"]
    assert trips["deep"] <= 2


def proactive(cap: int, **options: Any) -> Any:
    return compiler(cap, keepLast=1, policy="proactive", **options)


def test_proactive_trips_below_the_trigger_at_a_tool_result() -> None:
    g = tool_boundary(history(8))
    used = measured(g)
    cap = int(used / 0.6)  # at 0.6 of the cap: under the 0.75 trigger
    assert compile_attention(compiler(cap, keepLast=1), g, redactor=NOOP_REDACTOR).mutated is False
    out = compile_attention(proactive(cap), g, redactor=NOOP_REDACTOR)
    assert out.mutated and out.report.used_after < used
    assert stubbed_ids(out.groups) == [f"c{i}" for i in range(7)]


def test_proactive_waits_for_a_tool_result_boundary() -> None:
    g = groups_of(history(8))  # ends with the user's input
    cap = int(measured(g) / 0.6)
    assert compile_attention(proactive(cap), g, redactor=NOOP_REDACTOR).mutated is False


def test_proactive_never_acts_under_its_floor() -> None:
    g = tool_boundary(history(8))
    cap = int(measured(g) / 0.2)  # at 0.2 of the cap
    assert compile_attention(proactive(cap), g, redactor=NOOP_REDACTOR).mutated is False
    assert (
        compile_attention(proactive(cap, proactiveFloor=0.1), g, redactor=NOOP_REDACTOR).mutated
        is True
    )


def test_proactive_waits_until_the_trip_pays_for_itself() -> None:
    # Two eligible rows of small payloads beside a large protected one: the
    # saving is small next to what stays, so no trip.
    hist = history(3, payload="y" * 400)
    hist += [
        {"role": "assistant", "content": [{"type": "tool_call", "id": "big", "name": "pay"}]},
        {
            "role": "tool",
            "content": [
                {"type": "tool_result", "toolCallId": "big", "name": "pay", "result": "z" * 40_000}
            ],
        },
    ]
    g = tool_boundary(hist)
    cap = int(measured(g) / 0.6)
    assert (
        compile_attention(proactive(cap, excludeTools=["pay"]), g, redactor=NOOP_REDACTOR).mutated
        is False
    )


def test_proactive_ratio_comes_from_the_model_cache_pricing() -> None:
    assert cache_multipliers(None) == (0.1, 1.25)
    assert cache_multipliers({"pricing": {"input": 3.0}}) == (0.1, 1.25)  # incomplete
    priced = {"pricing": {"input": 2.0, "cacheRead": 0.5, "cacheWrite": 2.0}}
    assert cache_multipliers(priced) == (0.25, 1.0)
    model = {"provider": "p", "model": "m", "limits": {"contextWindow": 100_000}}
    default = create_attention_compiler({"policy": "proactive"}, model=model)
    assert default.proactive_ratio == pytest.approx(proactive_ratio(0.1, 1.25))
    assert 0.7 < default.proactive_ratio < 0.8
    cheap_writes = create_attention_compiler({"policy": "proactive"}, model={**model, **priced})
    assert cheap_writes.proactive_ratio == pytest.approx(proactive_ratio(0.25, 1.0))
    assert cheap_writes.proactive_ratio < default.proactive_ratio
    # The overlay keeps the agent's resolved ratio.
    assert cheap_writes.overlay({"keepLast": 0}).proactive_ratio == cheap_writes.proactive_ratio


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"policy": "eager"}, "policy must be one of deep, proactive, reference"),
        ({"policy": None}, "policy must be one of"),
        ({"proactiveFloor": 0.8}, "proactive_floor .* must be below trigger_ratio"),
        ({"proactiveFloor": 0}, "proactive_floor must be in"),
        ({"proactiveFloor": "0.3"}, "proactive_floor must be a number"),
    ],
)
def test_bad_policy_options_fail_closed(options: dict[str, Any], message: str) -> None:
    with pytest.raises(AttentionConfigError, match=message):
        AttentionCompilerOptions.from_json(options)


def test_policy_round_trips_and_is_agent_config_only() -> None:
    opts = AttentionCompilerOptions.from_json({"policy": "proactive", "proactiveFloor": 0.3})
    assert opts.to_json()["policy"] == "proactive"
    assert AttentionCompilerOptions.from_json(opts.to_json()) == opts
    handle = create_attention_compiler({**opts.to_json(), "maxInputTokens": 1000})
    for overlay in ({"policy": "deep"}, {"proactiveFloor": 0.5}):
        with pytest.raises(AttentionConfigError, match="agent config only"):
            handle.overlay(overlay)
    assert handle.overlay({"policy": "proactive"}) == handle  # unchanged is fine


def test_compaction_estimate_is_the_gate_floor_in_the_trigger_frame() -> None:
    hist = history(12)
    raw = measured(MessageGroups(history=hist))
    frontier = create_attention_sticky_frontier()
    handle = compiler(10**9, keepLast=1)
    floor = compile_attention(
        compiler(int(raw / 0.75) - 10, keepLast=1),
        MessageGroups(history=hist),
        redactor=NOOP_REDACTOR,
    ).report.used_after
    newest_result = measured(MessageGroups(history=hist[-1:]))
    estimate = estimate_compiled_tokens(handle, hist, frontier=frontier)
    # Room for one more result like the newest is kept, in the trigger's frame.
    assert estimate == -(-(floor + newest_result) // 0.75)
    assert estimate < raw and len(frontier) == 0
    # Nothing eligible (every result kept): the floor is the raw request.
    keep_all = compiler(10**9, keepLast=12, thinkingKeepTurns=12)
    assert estimate_compiled_tokens(keep_all, hist) >= raw / 0.75


def test_compaction_estimate_counts_what_the_frontier_keeps_applied() -> None:
    hist = history(6)
    frontier = create_attention_sticky_frontier()
    frontier.add((), ["c0"])
    handle = compiler(10**9, keepLast=6, thinkingKeepTurns=6)  # nothing eligible
    with_sticky = estimate_compiled_tokens(handle, hist, frontier=frontier)
    assert with_sticky < estimate_compiled_tokens(handle, hist)


@pytest.mark.parametrize("policy", ["deep", "proactive"])
def test_free_cache_reads_never_divide_by_zero(policy: str) -> None:
    # A model whose cache reads cost nothing: a proactive trip's saving is
    # zero, so it never pays; building the agent used to raise
    # ZeroDivisionError even under the default policy, which ignores the ratio.
    from prism.providers import create_mock_provider
    from prism.runtime import create_agent

    model = {
        "provider": "mock",
        "model": "free-reads",
        "limits": {"contextWindow": 100_000},
        "pricing": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 1.25},
    }
    assert cache_multipliers(model) == (0.0, 1.25)
    assert proactive_ratio(0.0, 1.25) == float("inf")
    agent = create_agent(
        model=model,  # type: ignore[arg-type]
        provider=create_mock_provider([[{"type": "done"}]]),
        attention_compiler={"policy": policy} if policy != "deep" else True,
    )
    assert agent is not None
    # The same request a default-priced proactive gate trips on stays whole:
    # with nothing saved per later request, a trip can never pay for itself.
    g = tool_boundary(history(8))
    cap = int(measured(g) / 0.6)
    assert compile_attention(proactive(cap), g, redactor=NOOP_REDACTOR).mutated is True
    free = create_attention_compiler(
        {"policy": "proactive", "maxInputTokens": cap, "keepLast": 1}, model=model
    )
    assert compile_attention(free, g, redactor=NOOP_REDACTOR).mutated is False
