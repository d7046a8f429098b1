"""The attention benchmark's seeded fixtures (no network, same bytes per seed).

- ``a`` / ``a150``: the growing coding session of :mod:`prism._bench.session`
  (user asks, the model thinks and calls a tool, a 1-40 KB result, an
  answer), 60 and 150 runs from an empty session.
- ``b``: a resumed long session. The store is preloaded with 100 turns (400
  messages) of earlier coding work whose results are 0.5-6 KB, and the
  session is continued for 30 more runs of the same kind. The preloaded
  history sits between the trigger and the window, so the gate trips on the
  first continued request (the shape behind the original's "one bust, on the
  trip turn").
- ``c``: a thinking-heavy chat: every run thinks 2-12 KB and answers; only
  one run in six calls a tool (small results).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prism._bench.session import TOOLS, iter_messages, tool_arguments, tool_result_value
from prism._bench.session import code as _code
from prism._bench.session import text as _text

__all__ = ["TOOLS", "Fixture", "Turn", "coding_turns", "fixtures"]


@dataclass
class Turn:
    """One run: the user's text, the model's thinking and text, an optional
    tool call with its result, and the answer after the result."""

    user: str
    thinking: str
    text: str
    call: dict[str, Any] | None
    result: Any
    answer: str


@dataclass
class Fixture:
    """A named session to replay: its turns, and for a resumed session the
    messages already in the store."""

    name: str
    title: str
    turns: list[Turn]
    # Messages already in the store when the benchmark starts (fixture b).
    preload: list[dict[str, Any]] = field(default_factory=list)


def _turns_from_messages(messages: list[dict[str, Any]]) -> list[Turn]:
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


def coding_turns(seed: int, runs: int) -> list[Turn]:
    """The growing coding session: ``runs`` turns of :func:`iter_messages`."""
    return _turns_from_messages(list(iter_messages(seed, runs)))


def _sized_messages(
    rng: random.Random, turns: int, size: Callable[[random.Random], int], prefix: str
) -> list[dict[str, Any]]:
    """Coding turns like iter_messages, with result sizes from ``size``."""
    out: list[dict[str, Any]] = []
    for turn in range(turns):
        tool = rng.choice(TOOLS)
        call_id = f"{prefix}_{turn}"
        out.append({"role": "user", "content": [{"type": "text", "text": _text(rng, 40, 600)}]})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": _text(rng, 300, 3000), "signature": "sig"},
                    {"type": "text", "text": _text(rng, 20, 200)},
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": tool,
                        "arguments": tool_arguments(rng, tool),
                    },
                ],
            }
        )
        block = {
            "type": "tool_result",
            "toolCallId": call_id,
            "name": tool,
            "result": tool_result_value(rng, tool, size(rng)),
        }
        out.append({"role": "tool", "content": [block]})
        out.append(
            {"role": "assistant", "content": [{"type": "text", "text": _text(rng, 50, 800)}]}
        )
    return out


def resumed_fixture(seed: int, preload_turns: int = 100, runs: int = 30) -> Fixture:
    """Fixture (b): ``preload_turns`` earlier turns in the store, ``runs`` more."""
    rng = random.Random(seed * 1000 + 2)

    def medium(r: random.Random) -> int:
        return r.randint(500, 6_000)

    earlier = _sized_messages(rng, preload_turns, medium, "early")
    later = _sized_messages(rng, runs, medium, "call")
    return Fixture(
        "b",
        f"(b) resumed session: {len(earlier)} messages preloaded, {runs} more runs",
        _turns_from_messages(later),
        preload=earlier,
    )


def thinking_fixture(seed: int, runs: int = 90) -> Fixture:
    """Fixture (c): a thinking-heavy chat with a small tool call every sixth run."""
    rng = random.Random(seed * 1000 + 3)
    turns = []
    for i in range(runs):
        call = None
        result: Any = None
        if i % 6 == 5:
            tool = rng.choice(("read_file", "grep"))
            call = {
                "type": "tool_call",
                "id": f"call_{i}",
                "name": tool,
                "arguments": tool_arguments(rng, tool),
            }
            result = _code(rng, rng.randint(300, 3_000))
        turns.append(
            Turn(
                user=_text(rng, 80, 900),
                thinking=_text(rng, 2_000, 12_000),
                text=_text(rng, 20, 200) if call else "",
                call=call,
                result=result,
                answer=_text(rng, 300, 2_500),
            )
        )
    return Fixture("c", f"(c) thinking-heavy chat: {runs} runs, a tool call every 6th", turns)


def fixtures(seed: int, runs: int, long_runs: int) -> dict[str, Fixture]:
    """Every fixture by name (``a``, ``a150``, ``b``, ``c``) for ``seed``."""
    return {
        "a": Fixture("a", f"(a) growing coding session: {runs} runs", coding_turns(seed, runs)),
        "a150": Fixture(
            "a150",
            f"(a) growing coding session: {long_runs} runs",
            coding_turns(seed, long_runs),
        ),
        "b": resumed_fixture(seed),
        "c": thinking_fixture(seed),
    }
