"""The LLM strategy inside a session: manual compaction, every auto trigger,
the attention compiler's pairing, kernel registration, and a 300-turn
session on a 32k-window model that never sends a request over the window."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.compaction.llm_support import SUMMARY_MODEL, prompt_of, summary_model

from prism import _native, create_mock_provider, define_tool
from prism.compaction import CompactionOptions
from prism.compaction.llm import (
    SPLIT_TURN_PROMPT,
    LlmCompactionStrategy,
    create_llm_compaction_extension,
    create_llm_compaction_strategy,
)
from prism.errors import ConfigError
from prism.extensions import create_extension_kernel
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio

WINDOW = 32_000
MODEL_32K = {"provider": "mock", "model": "main-32k", "limits": {"contextWindow": WINDOW}}


def reply(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done()]


def chatty() -> Any:
    return create_mock_provider(lambda request: reply("answer " + "a" * 2000))


async def test_manual_compact_with_the_strategy_rebuilds_provider_input() -> None:
    agent = create_agent(model=MODEL_32K, provider=chatty())
    session = agent.create_session("s1")
    for i in range(6):
        await session.run(f"question {i} " + "q" * 2000)
    model = summary_model("## Goal\nanswer six questions")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    entry = await session.compact(strategy=strategy)
    assert entry["data"]["strategy"] == "llm-compaction" and entry["data"]["trigger"] == "manual"
    messages = await session.messages()
    kept = set(entry["data"]["keepEntryIds"])
    assert len(messages) == len(kept) < 12
    # The next request carries the summary plus the kept messages only.
    await session.run("next")
    request = agent.config.provider.requests[-1]
    texts = [m["content"][0]["text"] for m in request["messages"]]
    assert any("answer six questions" in t for t in texts)
    assert not any(t.startswith("question 0") for t in texts)


@pytest.mark.parametrize(
    "trigger",
    [
        {"type": "threshold_entries", "entries": 8},
        {"type": "input_ratio", "ratio": 0.2},
        {"type": "custom", "should_compact": lambda ctx: ctx.entry_count > 8},
    ],
)
async def test_auto_compaction_uses_the_strategy_with_every_trigger(trigger: Any) -> None:
    model = summary_model("SUMMARY")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    agent = create_agent(
        model=MODEL_32K,
        provider=chatty(),
        compaction=CompactionOptions(strategy=strategy, trigger=trigger),
    )
    session = agent.create_session("s1")
    for i in range(8):
        await session.run(f"question {i} " + "q" * 2000)
    compactions = [e for e in await session.branch_entries() if e["kind"] == "compaction"]
    assert compactions and all(e["data"]["trigger"] == "auto" for e in compactions)
    assert all(e["data"]["strategy"] == "llm-compaction" for e in compactions)
    assert model.turns >= len(compactions)


async def test_threshold_entries_from_the_camel_case_config() -> None:
    strategy = create_llm_compaction_strategy(
        provider=summary_model("S"), model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    agent = create_agent(
        model=MODEL_32K,
        provider=chatty(),
        compaction={"strategy": strategy, "thresholdEntries": 6},
    )
    session = agent.create_session("s1")
    for i in range(5):
        await session.run(f"q{i} " + "q" * 2000)
    assert any(e["kind"] == "compaction" for e in await session.branch_entries())


def test_attention_pairing_rejects_an_input_ratio_below_the_shrink_ratio() -> None:
    strategy = create_llm_compaction_strategy(provider=summary_model(), model=SUMMARY_MODEL)
    with pytest.raises(ConfigError, match="input_ratio"):
        create_agent(
            model=MODEL_32K,
            provider=chatty(),
            attention_compiler={"triggerRatio": 0.75, "compactRatio": 0.9},
            compaction=CompactionOptions(
                strategy=strategy, trigger={"type": "input_ratio", "ratio": 0.7}
            ),
        )


async def test_kernel_registration_is_inert_until_the_host_uses_it() -> None:
    model = summary_model("FROM THE KERNEL")
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load(
        [
            create_llm_compaction_extension(
                provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
            )
        ]
    )
    assert report.ok
    strategy = kernel.registries.compaction_strategies.resolve("llm-compaction")
    assert isinstance(strategy, LlmCompactionStrategy)
    assert model.turns == 0  # loading called nothing
    assert kernel.registries.summary() == {"compactionStrategy": ["llm-compaction"]}

    agent = create_agent(
        model=MODEL_32K,
        provider=chatty(),
        compaction=CompactionOptions(strategy=strategy, threshold_entries=6),
    )
    session = agent.create_session("s1")
    for i in range(5):
        await session.run(f"q{i} " + "q" * 2000)
    assert model.turns >= 1
    compaction = [e for e in await session.branch_entries() if e["kind"] == "compaction"][-1]
    assert compaction["summary"].startswith("FROM THE KERNEL")


def test_extension_options_are_validated_before_loading() -> None:
    with pytest.raises(ConfigError, match="needs model="):
        create_llm_compaction_extension(provider=summary_model())
    strategy = create_llm_compaction_strategy(
        provider=summary_model(), model=SUMMARY_MODEL, name="cheap-llm"
    )
    with pytest.raises(TypeError, match="not both"):
        create_llm_compaction_extension(strategy, keep_recent_tokens=5)


async def test_a_custom_name_registers_under_that_name() -> None:
    strategy = create_llm_compaction_strategy(
        provider=summary_model(), model=SUMMARY_MODEL, name="cheap-llm"
    )
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([create_llm_compaction_extension(strategy)])
    assert kernel.registries.compaction_strategies.resolve("cheap-llm") is strategy


def request_tokens(request: Any) -> int:
    """The estimate of everything a request carries: messages and tool declarations."""
    total = sum(map(_native.estimate_message_tokens, request["messages"]))
    return total + sum(map(_native.estimate_value_tokens, request.get("tools") or ()))


async def test_a_300_turn_session_on_a_32k_model_stays_inside_the_window() -> None:
    rng = random.Random(12)
    # A coding session: most of the bytes are tool results (file reads), which
    # the attention compiler stubs at 0.75 of the cap; compaction fires at 0.9.
    files = {
        f"src/mod_{i}.py": "def f():\n    return 1\n" * rng.randint(200, 800) for i in range(20)
    }

    def main_model(request: Any) -> list[Any]:
        last = request["messages"][-1]
        if last["role"] == "user" and rng.random() < 0.6:
            path = rng.choice(sorted(files))
            name = rng.choice(["read", "edit"])
            arguments = {"path": path} if name == "read" else {"path": path, "old": "1", "new": "2"}
            return [
                provider_tool_call(f"call_{rng.randrange(10**9)}", name, arguments),
                provider_done(),
            ]
        return reply("done: " + "w" * rng.randint(200, 1200))

    main = create_mock_provider(main_model, record=True)  # every request is checked below
    summaries = create_mock_provider(
        lambda request: reply("## Goal\nKeep the project healthy.\n" + "s" * 1600), name="summary"
    )
    strategy = create_llm_compaction_strategy(
        provider=summaries,
        model={**SUMMARY_MODEL, "limits": {"contextWindow": WINDOW}},
        keep_recent_tokens=8000,
        reserve_tokens=4096,
    )
    tools = [
        define_tool("read", lambda args, ctx: files[args["path"]]),
        define_tool("edit", lambda args, ctx: {"ok": True, "path": args["path"]}),
    ]
    agent = create_agent(
        model=MODEL_32K,
        provider=main,
        tools=tools,
        attention_compiler={"triggerRatio": 0.75, "compactRatio": 0.9},
        compaction=CompactionOptions(
            strategy=strategy, trigger={"type": "input_ratio", "ratio": 0.9}
        ),
    )
    session = agent.create_session("long")
    for turn in range(300):
        result = await session.run(f"task {turn}: " + "t" * rng.randint(100, 800))
        assert result.text.startswith("done: ")

    entries = await session.branch_entries()
    compactions = [e for e in entries if e["kind"] == "compaction"]
    assert len(compactions) >= 5, len(compactions)
    assert all(
        e["data"]["strategy"] == "llm-compaction" and e["data"]["trigger"] == "auto"
        for e in compactions
    )
    # Every main request and every summary request (plus its output budget) fit the window.
    biggest = max(map(request_tokens, main.requests))
    assert biggest <= WINDOW, biggest
    for request in summaries.requests:
        assert request_tokens(request) + request["options"]["maxTokens"] <= WINDOW
    # Each later compaction updated the previous summary instead of starting over.
    # (Split-turn requests summarize a turn's beginning only and carry no summary.)
    history_prompts = [
        prompt_of(r) for r in summaries.requests if SPLIT_TURN_PROMPT not in prompt_of(r)
    ]
    assert len(history_prompts) >= len(compactions) - 1
    assert all("<previous-summary>" in p for p in history_prompts[1:])
    # File tracking accumulated across compactions.
    last = compactions[-1]["data"]
    assert last["readFiles"] or last["modifiedFiles"]
    assert last["estimatedTokensAfter"] < last["estimatedTokensBefore"]
    assert len(main.requests) >= 300
