"""A seeded, hermetic multi-turn coding session driven through a real
``AgentSession`` with the mock provider, once per compiler variant.

Each run is one fixture turn (benches/fixtures/session.py): the user asks,
the model thinks and calls a tool, the tool returns a 1-40 KB payload, the
model answers. That is two provider requests per run. Every request is
recorded and measured with the native token estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benches.fixtures.session import iter_messages

from prism import _native
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.tools import define_tool

MODEL: dict[str, Any] = {
    "provider": "mock",
    "model": "bench-200k",
    "limits": {"contextWindow": 200_000, "maxOutputTokens": 8_192},
}
TOOLS = ("read_file", "grep", "edit_file", "run_command", "list_dir")
CACHE_READ = 0.1
CACHE_WRITE = 1.25


@dataclass
class Turn:
    user: str
    thinking: str
    text: str
    call: dict[str, Any]
    result: Any
    answer: str


def fixture_turns(seed: int, runs: int) -> list[Turn]:
    messages = list(iter_messages(seed, runs))
    turns = []
    for i in range(0, len(messages), 4):
        user, asst, tool, answer = messages[i : i + 4]
        blocks = {b["type"]: b for b in asst["content"]}
        turns.append(
            Turn(
                user=user["content"][0]["text"],
                thinking=blocks["thinking"]["text"],
                text=blocks["text"]["text"],
                call=blocks["tool_call"],
                result=tool["content"][0]["result"],
                answer=answer["content"][0]["text"],
            )
        )
    return turns


@dataclass
class VariantResult:
    name: str
    input_tokens: list[int] = field(default_factory=list)
    busts: list[bool] = field(default_factory=list)
    cache_read: list[int] = field(default_factory=list)
    cache_write: list[int] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    bust_details: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def total(self) -> int:
        return sum(self.input_tokens)

    @property
    def cost(self) -> float:
        """Cache-aware input cost in base-input-token units."""
        return sum(
            r * CACHE_READ + w * CACHE_WRITE
            for r, w in zip(self.cache_read, self.cache_write, strict=True)
        )

    def to_json(self) -> dict[str, Any]:
        compiled = [e for e in self.events if e["type"] == "attention_compiled"]
        return {
            "name": self.name,
            "requests": len(self.input_tokens),
            "totalInputTokens": self.total,
            "peakInputTokens": max(self.input_tokens, default=0),
            "cacheBusts": sum(self.busts),
            "bustTurns": [i for i, b in enumerate(self.busts) if b],
            "cacheReadTokens": sum(self.cache_read),
            "cacheWriteTokens": sum(self.cache_write),
            "cacheAwareCost": round(self.cost),
            "attentionCompiledEvents": len(compiled),
            "firstTrip": (
                {
                    k: compiled[0][k]
                    for k in (
                        "used",
                        "usedAfter",
                        "droppedThinkingTurns",
                        "stubbedToolResults",
                        "stubbedBytes",
                        "truncated",
                    )
                }
                if compiled
                else None
            ),
            "truncatedTurns": sum(1 for e in compiled if e["truncated"]),
            "bustCauses": {
                cause: sum(1 for d in self.bust_details if d["cause"] == cause)
                for cause in sorted({d["cause"] for d in self.bust_details})
            },
            "bustDetails": self.bust_details,
            "perRequestInputTokens": self.input_tokens,
            "error": self.error,
        }


def request_tokens(request: dict[str, Any]) -> list[int]:
    """Per-message estimates (tool declarations counted as a leading row)."""
    rows = [_native.estimate_value_tokens(request.get("tools", []))]
    rows += [_native.estimate_message_tokens(m) for m in request["messages"]]
    return rows


def common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _is_stub(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("Tool result ") and " omitted " in value


def _has_thinking(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "thinking" for b in content
    )


def _stubbed(message: Any) -> int:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return 0
    return sum(
        1
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result" and _is_stub(b.get("result"))
    )


def explain_bust(
    index: int, previous: list[Any], current: list[Any], shared: int, rewritten: int
) -> dict[str, Any]:
    """Why request ``index`` does not extend the previous one: the rows of
    the previous request that changed, split into newly stubbed tool results
    and newly stripped thinking turns (anything else is ``other``)."""
    stubs = strips = other = 0
    for old, new in zip(previous[shared:], current[shared:], strict=False):
        if old == new:
            continue
        new_stubs = _stubbed(new) - _stubbed(old)
        stripped = _has_thinking(old) and not _has_thinking(new)
        stubs += max(new_stubs, 0)
        strips += int(stripped)
        if new_stubs <= 0 and not stripped:
            other += 1
    causes = [name for name, n in (("stubs", stubs), ("thinking", strips), ("other", other)) if n]
    first = current[shared] if shared < len(current) else None
    return {
        "request": index,
        "run": index // 2,
        "firstChangedRow": shared,
        "firstChangedRole": first.get("role") if isinstance(first, dict) else "tools",
        "newStubs": stubs,
        "newThinkingStrips": strips,
        "otherChangedRows": other,
        "cause": "+".join(causes) or "other",
        "rewrittenTokens": rewritten,
    }


def score(result: VariantResult, requests: list[dict[str, Any]]) -> None:
    """Tokens per request, cache busts (the previous request is not a prefix
    of this one) and the cache read/write split of a prompt cache that keeps
    the previous request's longest common prefix."""
    previous: list[Any] | None = None
    for request in requests:
        rows = request_tokens(request)
        msgs = [request.get("tools", []), *request["messages"]]
        total = sum(rows)
        if previous is None:
            read, bust = 0, False
        else:
            shared = common_prefix(previous, msgs)
            read = sum(rows[:shared])
            bust = shared < len(previous)
            if bust:
                detail = explain_bust(len(result.busts), previous, msgs, shared, total - read)
                result.bust_details.append(detail)
        result.input_tokens.append(total)
        result.busts.append(bust)
        result.cache_read.append(read)
        result.cache_write.append(total - read)
        previous = msgs


async def run_variant(
    name: str,
    attention: Any,
    turns: list[Turn],
    on_run: Callable[[], None] = lambda: None,
) -> VariantResult:
    by_call = {t.call["id"]: t for t in turns}

    def script(request: dict[str, Any]) -> list[Any]:
        n = sum(1 for m in request["messages"] if m["role"] == "user") - 1
        turn = turns[n]
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta(turn.answer), provider_done()]
        return [
            provider_thinking_delta(turn.thinking),
            provider_text_delta(turn.text),
            provider_tool_call(turn.call["id"], turn.call["name"], turn.call["arguments"]),
            provider_done(),
        ]

    def make_tool(tool_name: str) -> Any:
        def execute(args: dict[str, Any], ctx: Any) -> Any:
            return by_call[ctx.tool_call_id].result

        return define_tool(tool_name, execute, description=f"{tool_name} (bench)")

    provider = create_mock_provider(script)
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=[make_tool(t) for t in TOOLS],
        system="You are a careful coding agent.",
        attention_compiler=attention,
    )
    session = agent.create_session(id=f"bench-{name}")
    result = VariantResult(name)
    session.subscribe(result.events.append)
    for turn in turns:
        try:
            await session.run(turn.user)
        except Exception as error:  # the budget error ends the session honestly
            result.error = f"{type(error).__name__}: {error}"
            break
        on_run()
    score(result, provider.requests)
    return result
