"""Compaction options and the trigger union decided by resolve_should_compact."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from prism.compaction import (
    CompactionOptions,
    ShouldCompactContext,
    assert_compaction_trigger,
    coerce_compaction_options,
    create_default_compaction_strategy,
    resolve_should_compact,
)
from prism.errors import ConfigError

pytestmark = pytest.mark.anyio

MODEL = {
    "provider": "mock",
    "model": "m",
    "limits": {"contextWindow": 10_000, "maxOutputTokens": 1_000},
}
CAP = 10_000 - 1_000 - 1024  # reserve_tokens default


def entries(n: int, last_kind: str = "summary") -> list[dict[str, Any]]:
    out = [
        {
            "id": f"e{i}",
            "sessionId": "s",
            "parentId": f"e{i - 1}" if i else None,
            "kind": "summary",
            "summary": "x",
        }
        for i in range(n)
    ]
    if out and last_kind == "compaction":
        out[-1] = {
            **out[-1],
            "kind": "compaction",
            "data": {
                "throughEntryId": None,
                "keepEntryIds": [],
                "strategy": "s",
                "trigger": "auto",
            },
        }
    return out


def ctx(
    n: int = 5,
    *,
    tokens: int | None = None,
    model: Any = MODEL,
    calls: list[str] | None = None,
    **kw: Any,
) -> ShouldCompactContext:
    def estimate() -> int:
        if calls is not None:
            calls.append("estimate")
        assert tokens is not None
        return tokens

    return ShouldCompactContext(
        session_id="s",
        entries=entries(n, kw.pop("last_kind", "summary")),  # type: ignore[arg-type]
        model=model,
        estimate_input_tokens=estimate,
        **kw,
    )


# --- options ---------------------------------------------------------------------------


def test_options_defaults_and_from_json() -> None:
    assert CompactionOptions().effective_trigger is None
    assert CompactionOptions(threshold_entries=4).effective_trigger == {
        "type": "threshold_entries",
        "entries": 4,
    }
    fn = lambda c: True  # noqa: E731
    opts = CompactionOptions.from_json(
        {
            "thresholdEntries": 3,
            "keepRecentEntries": 2,
            "maxSummaryChars": 100,
            "metadata": {"k": 1},
            "trigger": {"type": "custom", "shouldCompact": fn},
        }
    )
    assert (
        opts.threshold_entries == 3
        and opts.keep_recent_entries == 2
        and opts.max_summary_chars == 100
    )
    assert opts.metadata == {"k": 1}
    assert opts.effective_trigger == {"type": "custom", "should_compact": fn}  # trigger wins
    assert CompactionOptions.from_json({"keep_recent_entries": 1}).keep_recent_entries == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"thresholdEntry": 3}, "unknown compaction option 'thresholdEntry'"),
        ({"thresholdEntries": 3, "threshold_entries": 4}, "given twice"),
        ({"thresholdEntries": -1}, "threshold_entries must be an integer >= 1"),
        ({"thresholdEntries": 0}, "threshold_entries must be an integer >= 1"),
        ({"keepRecentEntries": "8"}, "keep_recent_entries"),
        ({"maxSummaryChars": 0}, "max_summary_chars"),
        ({"secrets": ["abcdefgh"]}, "unknown compaction option 'secrets'"),
        ({"metadata": []}, "metadata must be an object"),
        ({"strategy": "default"}, "strategy must have a compact"),
        (
            {"trigger": {"type": "token_ratio", "ratio": 0.5}},
            "unknown compaction trigger type 'token_ratio'",
        ),
        ({"trigger": {"type": "input_ratio", "ratio": 1.5}}, "ratio"),
        ({"trigger": {"type": "threshold_entries"}}, "entries"),
        ({"trigger": {"type": "custom"}}, "should_compact"),
        ({"trigger": "input_ratio"}, "must be an object"),
    ],
)
def test_invalid_options_fail_at_construction(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CompactionOptions.from_json(value)


def test_unknown_trigger_is_a_type_error_too() -> None:
    with pytest.raises(TypeError, match="unknown compaction trigger type"):
        assert_compaction_trigger({"type": "nope"})
    with pytest.raises(TypeError):
        CompactionOptions(trigger={"type": "nope"})


def test_replace_revalidates() -> None:
    with pytest.raises(ConfigError, match="keep_recent_entries"):
        dataclasses.replace(CompactionOptions(), keep_recent_entries=-2)
    strategy = create_default_compaction_strategy()
    assert dataclasses.replace(CompactionOptions(), strategy=strategy).strategy is strategy


def test_coerce() -> None:
    assert coerce_compaction_options(None) is None
    assert coerce_compaction_options(False) is None
    assert coerce_compaction_options(True) == CompactionOptions()
    opts = CompactionOptions(threshold_entries=1)
    assert coerce_compaction_options(opts) is opts
    assert coerce_compaction_options({"thresholdEntries": 2}) == CompactionOptions(
        threshold_entries=2
    )
    with pytest.raises(ConfigError, match="got int"):
        coerce_compaction_options(3)


# --- triggers -------------------------------------------------------------------------------


async def test_no_trigger_never_compacts() -> None:
    assert await resolve_should_compact(None, ctx(100)) is False
    assert await resolve_should_compact(False, ctx(100)) is False
    assert await resolve_should_compact(CompactionOptions(), ctx(100)) is False


async def test_threshold_entries_is_strictly_greater() -> None:
    assert await resolve_should_compact(CompactionOptions(threshold_entries=5), ctx(5)) is False
    assert await resolve_should_compact(CompactionOptions(threshold_entries=5), ctx(6)) is True
    trig = {"trigger": {"type": "threshold_entries", "entries": 5}}
    assert await resolve_should_compact(trig, ctx(6)) is True
    # trigger replaces threshold_entries
    both = CompactionOptions(
        threshold_entries=1, trigger={"type": "threshold_entries", "entries": 50}
    )
    assert await resolve_should_compact(both, ctx(6)) is False


async def test_branch_ending_in_a_compaction_is_skipped() -> None:
    opts = CompactionOptions(threshold_entries=1)
    assert await resolve_should_compact(opts, ctx(6, last_kind="compaction")) is False


async def test_input_ratio_against_the_resolved_cap() -> None:
    opts = CompactionOptions(trigger={"type": "input_ratio", "ratio": 0.5})
    at = int(CAP * 0.5) + 1
    assert await resolve_should_compact(opts, ctx(tokens=at)) is True
    assert await resolve_should_compact(opts, ctx(tokens=at - 2)) is False
    c = ctx(tokens=10)
    await resolve_should_compact(opts, c)
    assert c.input_cap_tokens == CAP
    # a host cap from the attention options wins over the model window
    capped = ctx(tokens=60, attention={"maxInputTokens": 100})
    assert await resolve_should_compact(opts, capped) is True


async def test_input_ratio_with_unresolvable_cap_fails_loudly() -> None:
    opts = CompactionOptions(trigger={"type": "input_ratio", "ratio": 0.9})
    with pytest.raises(ConfigError, match="contextWindow"):
        await resolve_should_compact(opts, ctx(tokens=10, model={"provider": "p", "model": "m"}))
    with pytest.raises(ConfigError, match="not positive"):
        await resolve_should_compact(
            opts,
            ctx(
                tokens=10, model={"provider": "p", "model": "m", "limits": {"contextWindow": 1000}}
            ),
        )


async def test_custom_sync_and_async_with_lazy_tokens() -> None:
    calls: list[str] = []
    seen: list[Any] = []

    def by_count(c: ShouldCompactContext) -> bool:
        seen.append((c.session_id, c.entry_count, dict(c.metadata)))
        return c.entry_count > 3

    opts = CompactionOptions(
        trigger={"type": "custom", "should_compact": by_count}, metadata={"k": "v"}
    )
    c = ctx(5, calls=calls, model=None, metadata={"k": "v"})
    assert await resolve_should_compact(opts, c) is True
    assert seen == [("s", 5, {"k": "v"})]
    assert calls == []  # never estimated, never needed a cap

    async def by_tokens(c: ShouldCompactContext) -> bool:
        return c.estimated_input_tokens >= c.input_cap_tokens // 2

    opts2 = CompactionOptions(trigger={"type": "custom", "should_compact": by_tokens})
    c2 = ctx(tokens=CAP, calls=calls)
    assert await resolve_should_compact(opts2, c2) is True
    assert c2.estimated_input_tokens == CAP
    assert calls == ["estimate"]  # computed once, then cached


@pytest.mark.parametrize(
    "callback",
    [
        pytest.param(lambda c: 1 / 0, id="raises"),
        pytest.param(lambda c: c.input_cap_tokens > 0, id="cap-unresolvable"),
        pytest.param(lambda c: "yes", id="not-a-bool"),
        pytest.param(lambda c: None, id="none"),
    ],
)
async def test_custom_failures_decide_false(callback: Any) -> None:
    opts = CompactionOptions(trigger={"type": "custom", "should_compact": callback})
    assert await resolve_should_compact(opts, ctx(tokens=1, model=None)) is False


async def test_custom_async_raising_decides_false() -> None:
    async def boom(c: ShouldCompactContext) -> bool:
        raise RuntimeError("host bug")

    opts = {"trigger": {"type": "custom", "shouldCompact": boom}}
    assert await resolve_should_compact(opts, ctx()) is False


async def test_raw_mapping_with_unknown_trigger_fails_at_first_use() -> None:
    with pytest.raises(ConfigError, match="unknown compaction trigger type"):
        await resolve_should_compact({"trigger": {"type": "sometimes"}}, ctx())


async def test_default_estimate_uses_native_message_tokens() -> None:
    from prism import _native

    messages = [{"role": "user", "content": [{"type": "text", "text": "x" * 400}]}]
    c = ShouldCompactContext(session_id="s", entries=[], messages=messages)  # type: ignore[list-item]
    assert c.estimated_input_tokens == _native.estimate_message_tokens(messages[0])
    e = entries(3)
    c2 = ShouldCompactContext(session_id="s", entries=e)  # type: ignore[arg-type]
    assert c2.entry_count == 3
    assert c2.estimated_input_tokens == sum(_native.estimate_entry_tokens(x) for x in e)


def test_secrets_never_appear_in_reprs() -> None:
    from prism.compaction import CompactionContext

    secret = "sk-repr-secret-0123456789"
    from prism.security import create_redactor

    redactor = create_redactor([secret])
    assert secret not in repr(CompactionContext(session_id="s", entries=[], redactor=redactor))


def test_compaction_takes_the_agents_redactor_never_a_list() -> None:
    from prism.compaction import CompactionContext

    with pytest.raises(TypeError, match="redactor"):
        CompactionContext(session_id="s", entries=[])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="create_redactor"):
        CompactionContext(session_id="s", entries=[], redactor=["sk-a-list-0123"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        CompactionContext(session_id="s", entries=[], secrets=["x"])  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="secrets"):
        CompactionOptions.from_json({"secrets": ["sk-a-list-0123"]})
    with pytest.raises(TypeError):
        create_default_compaction_strategy(secrets=["sk-a-list-0123"])  # type: ignore[call-arg]
