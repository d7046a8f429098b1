"""A scripted worker provider for observational-memory tests.

``ScriptedWorkers`` is a function model: it tells the observer, reflector
and dropper apart by their system prompt and answers each from its own
queue of turns. A turn is a list of provider events or a callable
``(request) -> events``; a worker whose queue is empty answers "done".
Every request is kept (per worker) so tests can read what a worker saw.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from prism.memory import workers
from prism.providers import (
    MockProvider,
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)

PROMPTS = {
    workers.OBSERVER_PROMPT: "observer",
    workers.REFLECTOR_PROMPT: "reflector",
    workers.DROPPER_PROMPT: "dropper",
}

Turn = list[Any] | Callable[[dict[str, Any]], list[Any]]


def worker_name(request: dict[str, Any]) -> str:
    text = json.dumps(request["messages"], ensure_ascii=False)
    for prompt, name in PROMPTS.items():
        if json.dumps(prompt, ensure_ascii=False)[1:-1] in text:
            return name
    raise AssertionError("not a worker request")


def done(text: str = "done") -> list[Any]:
    return [provider_text_delta(text), provider_done()]


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> list[Any]:
    return [provider_tool_call(call_id, name, args), provider_done("tool_calls")]


def bracket_ids(request: dict[str, Any], pattern: str = r"\[([a-f0-9]{12})\]") -> list[str]:
    """Ids shown in the worker's prompt (the last user message)."""
    users = [m for m in request["messages"] if m["role"] == "user"]
    text = "".join(b.get("text", "") for b in users[-1]["content"])
    return re.findall(pattern, text)


def entry_ids(request: dict[str, Any]) -> list[str]:
    return bracket_ids(request, r"\[(entry_[a-z0-9]+)\]")


def last_tool_result(request: dict[str, Any]) -> Any:
    tools = [m for m in request["messages"] if m["role"] == "tool"]
    return tools[-1]["content"][0] if tools else None


class ScriptedWorkers:
    def __init__(self, **turns: list[Turn]) -> None:
        self.turns: dict[str, list[Turn]] = {k: list(v) for k, v in turns.items()}
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.provider: MockProvider = create_mock_provider(self._reply)

    def _reply(self, request: Any) -> list[Any]:
        name = worker_name(request)
        self.requests[name].append(request)
        queue = self.turns.get(name) or []
        if not queue:
            return done()
        turn = queue.pop(0)
        return turn(request) if callable(turn) else turn

    def all_requests_text(self) -> str:
        return json.dumps(dict(self.requests), ensure_ascii=False)
