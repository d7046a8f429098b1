from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from prism.attention import (
    AttentionCompiler,
    AttentionCompilerOptions,
    AttentionConfigError,
    create_attention_compiler,
    resolve_input_cap,
    resolve_run_compiler,
)
from prism.errors import ConfigError

MODEL: dict[str, Any] = {
    "provider": "mock",
    "model": "m",
    "limits": {"contextWindow": 200_000, "maxOutputTokens": 8_192},
}


def test_defaults_match_reference() -> None:
    o = AttentionCompilerOptions()
    assert (o.trigger_ratio, o.compact_ratio, o.thinking_keep_turns, o.keep_last) == (
        0.75,
        0.9,
        1,
        3,
    )
    assert o.exclude_tools == ()
    assert o.max_input_tokens is None
    assert o.reserve_tokens == 1024
    assert o.target_ratio is None
    assert o.incremental is False


def test_options_are_frozen_and_slotted() -> None:
    o = AttentionCompilerOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.keep_last = 5  # type: ignore[misc]
    assert not hasattr(o, "__dict__")


@pytest.mark.parametrize("name", ["trigger_ratio", "compact_ratio", "target_ratio"])
@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_ratios_exclusive_range(name: str, value: float) -> None:
    with pytest.raises(TypeError, match=rf"{name} must be in \(0, 1\) exclusive"):
        AttentionCompilerOptions(**{name: value})


@pytest.mark.parametrize("value", ["0.5", True, None, [0.5]])
def test_ratio_type(value: object) -> None:
    with pytest.raises(TypeError, match="trigger_ratio must be a number"):
        AttentionCompilerOptions(trigger_ratio=value)  # type: ignore[arg-type]


def test_compact_must_exceed_trigger() -> None:
    with pytest.raises(TypeError, match=r"compact_ratio \(0.75\) must exceed trigger_ratio"):
        AttentionCompilerOptions(trigger_ratio=0.75, compact_ratio=0.75)
    with pytest.raises(TypeError, match="must exceed"):
        AttentionCompilerOptions(trigger_ratio=0.95)


def test_target_below_trigger() -> None:
    with pytest.raises(TypeError, match=r"target_ratio \(0.75\) must be below trigger_ratio"):
        AttentionCompilerOptions(target_ratio=0.75)
    assert AttentionCompilerOptions(target_ratio=0.5).target_ratio == 0.5


@pytest.mark.parametrize("name", ["thinking_keep_turns", "keep_last", "reserve_tokens"])
def test_counts(name: str) -> None:
    with pytest.raises(TypeError, match=rf"{name} must be >= 0, got -1"):
        AttentionCompilerOptions(**{name: -1})
    with pytest.raises(TypeError, match=rf"{name} must be an integer, got float"):
        AttentionCompilerOptions(**{name: 1.5})
    with pytest.raises(TypeError, match=rf"{name} must be an integer, got bool"):
        AttentionCompilerOptions(**{name: True})
    assert getattr(AttentionCompilerOptions(**{name: 0}), name) == 0


def test_max_input_tokens_positive() -> None:
    with pytest.raises(TypeError, match="max_input_tokens must be >= 1, got 0"):
        AttentionCompilerOptions(max_input_tokens=0)


def test_incremental_bool() -> None:
    with pytest.raises(TypeError, match="incremental must be a bool"):
        AttentionCompilerOptions(incremental=1)  # type: ignore[arg-type]


def test_exclude_tools_validated_deduplicated_frozen() -> None:
    o = AttentionCompilerOptions(exclude_tools=["a", "b", "a"])  # type: ignore[arg-type]
    assert o.exclude_tools == ("a", "b")
    assert isinstance(o.exclude_tools, tuple)
    with pytest.raises(TypeError, match="exclude_tools must be a list of tool names, got str"):
        AttentionCompilerOptions(exclude_tools="abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"exclude_tools\[1\] must not be empty"):
        AttentionCompilerOptions(exclude_tools=("a", " "))
    with pytest.raises(TypeError, match=r"exclude_tools\[0\] must be a string, got int"):
        AttentionCompilerOptions(exclude_tools=(1,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"exclude_tools\[0\] is longer than 256"):
        AttentionCompilerOptions(exclude_tools=("x" * 257,))
    with pytest.raises(TypeError, match="more than 256 names"):
        AttentionCompilerOptions(exclude_tools=tuple(f"t{i}" for i in range(257)))


def test_errors_are_type_and_config_errors() -> None:
    with pytest.raises(AttentionConfigError) as info:
        AttentionCompilerOptions(keep_last=-1)
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, ConfigError)


def test_from_json_camel_case() -> None:
    o = AttentionCompilerOptions.from_json(
        {
            "triggerRatio": 0.6,
            "compactRatio": 0.8,
            "thinkingKeepTurns": 2,
            "keepLast": 4,
            "excludeTools": ["submit_payment"],
            "maxInputTokens": 1000,
            "reserveTokens": 10,
            "targetRatio": 0.4,
            "incremental": True,
        }
    )
    assert o == AttentionCompilerOptions(
        trigger_ratio=0.6,
        compact_ratio=0.8,
        thinking_keep_turns=2,
        keep_last=4,
        exclude_tools=("submit_payment",),
        max_input_tokens=1000,
        reserve_tokens=10,
        target_ratio=0.4,
        incremental=True,
    )
    assert AttentionCompilerOptions.from_json(o.to_json()) == o


def test_from_json_rejects_unknown_and_non_objects() -> None:
    with pytest.raises(TypeError, match="unknown attention compiler option 'triggerratio'"):
        AttentionCompilerOptions.from_json({"triggerratio": 0.5})
    with pytest.raises(TypeError, match="must be an object, got list"):
        AttentionCompilerOptions.from_json([])
    with pytest.raises(TypeError, match="given twice"):
        AttentionCompilerOptions.from_json({"keepLast": 1, "keep_last": 2})


def test_resolve_input_cap() -> None:
    assert resolve_input_cap(None, MODEL) == 200_000 - 8_192 - 1024
    assert resolve_input_cap({"reserveTokens": 0}, MODEL) == 200_000 - 8_192
    assert resolve_input_cap(AttentionCompilerOptions(max_input_tokens=5000), MODEL) == 5000
    assert resolve_input_cap({"maxInputTokens": 7}, None) == 7
    assert resolve_input_cap(None, {"limits": {"contextWindow": 5000}}) == 5000 - 1024


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (None, "needs max_input_tokens or model.limits.contextWindow"),
        ({}, "needs max_input_tokens or model.limits.contextWindow"),
        ({"limits": {}}, "needs max_input_tokens or model.limits.contextWindow"),
        ({"limits": []}, "model.limits must be an object"),
        ({"limits": {"contextWindow": "200k"}}, "contextWindow must be a non-negative integer"),
        ({"limits": {"contextWindow": -5}}, "contextWindow must be a non-negative integer"),
        ({"limits": {"contextWindow": True}}, "contextWindow must be a non-negative integer"),
        (
            {"limits": {"contextWindow": 1000, "maxOutputTokens": 1.5}},
            "maxOutputTokens must be a non-negative integer",
        ),
        ({"limits": {"contextWindow": 1000}}, r"not positive \(1000 - 0 - 1024 = -24\)"),
        ("model", "model must be an object"),
    ],
)
def test_resolve_input_cap_fails_closed(model: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        resolve_input_cap(None, model)


def test_create_compiler() -> None:
    c = create_attention_compiler(
        {"triggerRatio": 0.75, "excludeTools": ["submit_payment", "submit_payment"]},
        model=MODEL,
    )
    assert isinstance(c, AttentionCompiler)
    assert c.input_cap == 200_000 - 8_192 - 1024
    assert c.exclude_tools == ("submit_payment",)
    assert c.trigger_ratio == 0.75 and c.compact_ratio == 0.9 and c.reserve_tokens == 1024
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.input_cap = 1  # type: ignore[misc]
    assert create_attention_compiler(True, model=MODEL).options == AttentionCompilerOptions()
    assert create_attention_compiler(c) is c
    with pytest.raises(TypeError, match="needs max_input_tokens"):
        create_attention_compiler()
    with pytest.raises(TypeError, match="must be True, AttentionCompilerOptions"):
        create_attention_compiler(3, model=MODEL)


def test_create_compiler_validates_compaction_trigger() -> None:
    create_attention_compiler(model=MODEL, compaction_trigger={"type": "input_ratio", "ratio": 0.9})
    with pytest.raises(TypeError, match="unknown compaction trigger type 'ratio'"):
        create_attention_compiler(model=MODEL, compaction_trigger={"type": "ratio"})
    with pytest.raises(TypeError, match=r"input_ratio \(0.75\) must exceed the attention"):
        create_attention_compiler(
            model=MODEL, compaction_trigger={"type": "input_ratio", "ratio": 0.75}
        )
    with pytest.raises(TypeError, match=r"input_ratio \(0.5\) must exceed"):
        create_attention_compiler(
            model=MODEL, compaction_trigger={"type": "input_ratio", "ratio": 0.5}
        )


def base() -> AttentionCompiler:
    return create_attention_compiler(
        {"triggerRatio": 0.7, "compactRatio": 0.9, "keepLast": 3, "excludeTools": ["a"]},
        model=MODEL,
    )


def test_overlay_disable_and_noop() -> None:
    c = base()
    assert c.overlay(False) is None
    assert c.overlay(True) is c
    assert c.overlay(None) is c
    assert c.overlay({}) is c


def test_overlay_narrowing_allowed() -> None:
    c = base()
    n = c.overlay(
        {"triggerRatio": 0.8, "keepLast": 1, "thinkingKeepTurns": 0, "excludeTools": ["b", "a"]}
    )
    assert n is not None
    assert n.trigger_ratio == 0.8 and n.keep_last == 1 and n.thinking_keep_turns == 0
    assert n.exclude_tools == ("a", "b")
    assert n.input_cap == c.input_cap
    both = c.overlay({"triggerRatio": 0.95, "compactRatio": 0.99})
    assert both is not None and both.trigger_ratio == 0.95
    # An options object: a field at its default counts only when it narrows.
    obj = c.overlay(AttentionCompilerOptions(trigger_ratio=0.8))
    assert obj is not None and obj.trigger_ratio == 0.8 and obj.keep_last == 3


def test_overlay_options_object_defaults_apply_only_when_narrowing() -> None:
    agent = create_attention_compiler(
        {"keepLast": 5, "thinkingKeepTurns": 0, "triggerRatio": 0.8}, model=MODEL
    )
    run = agent.overlay(AttentionCompilerOptions(trigger_ratio=0.85, keep_last=3))
    assert run is not None
    # keep_last=3 (the default) narrows 5 -> 3; thinking_keep_turns=1 (default)
    # would widen 0 -> 1 and reserve_tokens is unchanged, so both are ignored.
    assert (run.keep_last, run.thinking_keep_turns, run.trigger_ratio) == (3, 0, 0.85)
    with pytest.raises(TypeError, match="may only lower keep_last"):
        agent.overlay(AttentionCompilerOptions(keep_last=6))


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"triggerRatio": 0.6}, r"may only raise trigger_ratio \(0.6 < agent 0.7\)"),
        ({"compactRatio": 0.85}, "may only raise compact_ratio"),
        ({"keepLast": 4}, r"may only lower keep_last \(4 > agent 3\)"),
        ({"thinkingKeepTurns": 2}, "may only lower thinking_keep_turns"),
        ({"maxInputTokens": 10}, "may not set max_input_tokens"),
        ({"reserveTokens": 10}, "may not set reserve_tokens"),
        ({"triggerRatio": 0.95}, "raise compact_ratio in the same overlay"),
        ({"targetRatio": 0.5}, "may only raise target_ratio"),
        ({"bogus": 1}, "unknown attention compiler option 'bogus'"),
        (3, "run attention_compiler must be False, True"),
    ],
)
def test_overlay_rejects_widening(overlay: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        base().overlay(overlay)


def test_overlay_target_ratio() -> None:
    c = create_attention_compiler({"targetRatio": 0.5}, model=MODEL)
    raised = c.overlay({"targetRatio": 0.6})
    assert raised is not None and raised.target_ratio == 0.6
    with pytest.raises(TypeError, match="may only raise target_ratio"):
        c.overlay({"targetRatio": 0.4})
    off = c.overlay({"targetRatio": None})
    assert off is not None and off.target_ratio is None


def test_resolve_run_compiler_never_enables() -> None:
    assert resolve_run_compiler(None, None) is None
    assert resolve_run_compiler(None, False) is None
    for run in (True, {"keepLast": 1}):
        with pytest.raises(TypeError, match="cannot be enabled from a run"):
            resolve_run_compiler(None, run)
    c = base()
    assert resolve_run_compiler(c, None) is c
    assert resolve_run_compiler(c, False) is None
