"""tool_result_fold: a host summary wins over the digest stub, is asked once
per call id (cached on the frontier), is capped, redacted and only used when
it shrinks the row; and navigate() restores the frontier of the branch it
moves to; and auto-compaction measures what the gate would send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.attention.test_attention_compile import PAYLOAD, STUB, groups_of, history

from prism._native import Redactor
from prism.attention import (
    AttentionCompilerOptions,
    AttentionConfigError,
    ToolResultFold,
    compile_attention,
    create_attention_compiler,
    create_attention_sticky_frontier,
)
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.stores import create_jsonl_session_store
from prism.tools import define_tool


class Summarizer:
    def __init__(self, text: Any = "short summary of {id}") -> None:
        self.calls: list[str] = []
        self.text = text

    def __call__(self, block: Any) -> Any:
        self.calls.append(block["toolCallId"])
        if isinstance(self.text, Exception):
            raise self.text
        return self.text.format(id=block["toolCallId"]) if isinstance(self.text, str) else None


def folded(summarize: Any, **options: Any) -> Any:
    return create_attention_compiler(
        {"maxInputTokens": 4000, "keepLast": 1, "tool_result_fold": summarize, **options}
    )


def results(groups: Any) -> list[Any]:
    return [m["content"][0]["result"] for m in groups.history if m["role"] == "tool"]


def test_summary_replaces_the_stub_and_counts_are_corrected() -> None:
    fold = Summarizer()
    out = compile_attention(folded(fold), groups_of(history(6)), redactor=NOOP_REDACTOR)
    texts = results(out.groups)
    assert texts[:5] == [f"short summary of c{i}" for i in range(5)] and texts[5] == PAYLOAD
    assert fold.calls == [f"c{i}" for i in range(5)]
    measured = compile_attention(
        folded(fold, maxInputTokens=10**9), out.groups, redactor=NOOP_REDACTOR
    ).report.used
    assert out.report.used_after == measured
    payload = len(json.dumps(PAYLOAD).encode())  # compact JSON, quotes included
    assert out.report.stubbed_bytes == 5 * payload - sum(len(t) for t in texts[:5])


def test_summary_is_asked_once_per_call_id() -> None:
    fold = Summarizer()
    frontier = create_attention_sticky_frontier()
    first = compile_attention(
        folded(fold), groups_of(history(6)), frontier=frontier, redactor=NOOP_REDACTOR
    )
    again = compile_attention(
        folded(fold), groups_of(history(7)), frontier=frontier, redactor=NOOP_REDACTOR
    )
    assert fold.calls.count("c0") == 1
    assert results(again.groups)[:5] == results(first.groups)[:5]
    assert len(fold.calls) == len(set(fold.calls))


@pytest.mark.parametrize(
    "answer",
    [None, "", RuntimeError("summarizer down"), "x" * 5000],
    ids=["declined", "empty", "raises", "longer"],
)
def test_declined_failing_or_longer_summaries_keep_the_digest_stub(answer: Any) -> None:
    fold = Summarizer(answer) if not isinstance(answer, str) or not answer else None
    summarize: Any = fold
    if fold is None:  # longer than the 4000-byte payload, under the cap
        summarize = ToolResultFold(lambda block: answer, max_summary_bytes=10_000)
    frontier = create_attention_sticky_frontier()
    out = compile_attention(
        folded(summarize), groups_of(history(6)), frontier=frontier, redactor=NOOP_REDACTOR
    )
    assert all(STUB.match(t) for t in results(out.groups)[:5])
    compile_attention(
        folded(summarize), groups_of(history(6)), frontier=frontier, redactor=NOOP_REDACTOR
    )
    if fold is not None:
        assert len(fold.calls) == 5  # the decision is cached too


def test_summary_is_capped_and_redacted() -> None:
    secret = "sk-live-abcdef123456"
    fold = ToolResultFold(lambda block: f"token={secret} " + "é" * 200, max_summary_bytes=64)
    redactor = Redactor([secret])
    out = compile_attention(folded(fold), groups_of(history(3)), redactor=redactor)
    text = results(out.groups)[0]
    assert secret not in text and len(text.encode()) <= 64
    text.encode("utf-8")  # never half a character


def test_fold_accepts_an_object_with_summarize() -> None:
    class Host:
        max_summary_bytes = 20

        def summarize(self, block: Any) -> str:
            return "s" * 100

    opts = AttentionCompilerOptions(tool_result_fold=Host())
    assert isinstance(opts.tool_result_fold, ToolResultFold)
    assert opts.tool_result_fold.max_summary_bytes == 20
    assert "tool_result_fold" not in json.dumps(opts.to_json())


@pytest.mark.parametrize(
    ("fold", "message"),
    [
        (42, "tool_result_fold must be a ToolResultFold, a callable"),
        (ToolResultFold.__new__(ToolResultFold), None),
    ],
)
def test_bad_fold_fails_closed(fold: Any, message: str | None) -> None:
    if message is None:
        with pytest.raises(AttentionConfigError, match="max_summary_bytes"):
            ToolResultFold(len, max_summary_bytes=0)
        with pytest.raises(AttentionConfigError, match="summarize must be callable"):
            ToolResultFold("nope")  # type: ignore[arg-type]
        return
    with pytest.raises(AttentionConfigError, match=message):
        AttentionCompilerOptions(tool_result_fold=fold)


def test_a_run_may_not_swap_the_summarizer() -> None:
    handle = folded(Summarizer())
    with pytest.raises(AttentionConfigError, match="agent config only"):
        handle.overlay({"tool_result_fold": Summarizer()})


# --- navigate() and the frontier of a branch -----------------------------------------

BIG = "q" * 6000


def script(request: Any) -> list[Any]:
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("done"), provider_done()]
    n = sum(1 for m in request["messages"] if m["role"] == "user")
    return [provider_tool_call(f"call_{n}", "fetch", {"n": n}), provider_done()]


def stubbed(request: Any) -> list[str]:
    return [
        b["toolCallId"]
        for m in request["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result" and b["result"] != BIG
    ]


@pytest.mark.anyio
async def test_navigate_restores_the_frontier_of_the_branch(tmp_path: Path) -> None:
    provider = create_mock_provider(script)
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[define_tool("fetch", lambda args, ctx: BIG)],
        attention_compiler={"maxInputTokens": 8000, "keepLast": 1, "persistFrontier": True},
        store=create_jsonl_session_store(tmp_path / "s.jsonl"),
    )
    session = agent.create_session(id="s")
    await session.run("task 0")
    fork_point = session.branch.leaf_id
    for n in range(1, 5):
        await session.run(f"task {n}")
    assert stubbed(provider.requests[-1])  # branch A tripped
    branch_a = session.branch.leaf_id
    a_frontier = session.attention_sticky.to_json()

    await session.navigate(fork_point)  # branch B: short, nothing stubbed yet
    await session.run("task b")
    assert stubbed(provider.requests[-1]) == []
    assert session.attention_sticky.to_json() != a_frontier

    await session.navigate(branch_a)
    await session.run("task a5")
    first_back = provider.requests[-2]
    assert set(a_frontier["toolCallIds"]) <= set(stubbed(first_back))


@pytest.mark.anyio
async def test_auto_compaction_measures_what_the_gate_sends() -> None:
    def agent_with(attention: Any) -> tuple[Any, Any]:
        provider = create_mock_provider(script)
        agent = create_agent(
            model={"provider": "mock", "model": "demo"},
            provider=provider,
            tools=[define_tool("fetch", lambda args, ctx: BIG)],
            attention_compiler=attention,
            compaction={"trigger": {"type": "input_ratio", "ratio": 0.9}},
        )
        return agent, provider

    counts = {}
    for name, attention in (("on", {"maxInputTokens": 8000, "keepLast": 1}), ("off", None)):
        agent, provider = agent_with(attention)
        if attention is None:
            agent, provider = (
                create_agent(
                    model={"provider": "mock", "model": "demo", "limits": {"contextWindow": 8000}},
                    provider=provider,
                    tools=[define_tool("fetch", lambda args, ctx: BIG)],
                    compaction={"trigger": {"type": "input_ratio", "ratio": 0.9}},
                ),
                provider,
            )
        session = agent.create_session()
        events: list[Any] = []
        session.subscribe(events.append)
        for n in range(8):
            await session.run(f"task {n}")
        counts[name] = sum(1 for e in events if e["type"] == "compaction_finished")
    # Raw history passes 0.9 of the cap within a few runs; the gate's stubs
    # keep the compiled request far below it, so compaction never fires.
    assert counts["off"] >= 1 and counts["on"] == 0
