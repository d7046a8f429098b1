"""The CLI's built-in ``mock`` provider: a deterministic echo.

It answers every request with ``Mock reply to: <last user text> (turn N)``,
where N counts the user messages in the request, so a smoke test can see
both that the prompt arrived and that earlier turns of a persisted session
were sent along. The reply is streamed as one delta per word, then a
``done`` event with rough usage. The prompt ``mock:error`` gets a provider
error instead. The prompt ``mock:tool NAME {json args}`` makes the mock call
the agent's tool NAME with those arguments (then reply as usual once the
result is back), so an enabled tool such as ``recall`` can be exercised from
the command line. It is runtime-core's function-model mock,
so ``delay_ms`` is that mock's per-event spacing and an abort cancels it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from prism.contracts import Message, ProviderEvent, ProviderRequest
from prism.providers import (
    MockProvider,
    create_mock_provider,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_tool_call,
)

MOCK_PROVIDER_NAME = "mock"
MOCK_DEFAULT_MODEL = "demo"
# A prompt of exactly this text makes the mock fail its turn, so the error
# paths (exit codes, ok:false responses) can be tried without a network.
MOCK_ERROR_PROMPT = "mock:error"
MOCK_ERROR_MESSAGE = "Mock provider error (requested by the prompt)"
MOCK_ERROR_CODE = "mock_error"
MOCK_TOOL_PREFIX = "mock:tool "


def _text_of(message: Message) -> str:
    parts: list[str] = []
    for block in message.get("content", []):
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def mock_reply_text(messages: Sequence[Message]) -> str:
    """The exact reply the mock gives for these request messages."""
    users = [m for m in messages if m.get("role") == "user"]
    last = _text_of(users[-1]) if users else ""
    return f"Mock reply to: {last} (turn {len(users)})"


def split_deltas(text: str) -> list[str]:
    """One delta per word with its whitespace, so joining them is lossless."""
    return re.findall(r"\s*\S+\s*", text) or [text]


def _echo(request: ProviderRequest) -> list[ProviderEvent]:
    messages = request.get("messages", [])
    users = [m for m in messages if m.get("role") == "user"]
    if users and _text_of(users[-1]) == MOCK_ERROR_PROMPT:
        return [provider_error(MOCK_ERROR_MESSAGE, MOCK_ERROR_CODE)]
    if users and messages[-1] is users[-1] and _text_of(users[-1]).startswith(MOCK_TOOL_PREFIX):
        return _tool_call(_text_of(users[-1])[len(MOCK_TOOL_PREFIX) :], len(users))
    reply = mock_reply_text(messages)
    events: list[ProviderEvent] = [provider_text_delta(p) for p in split_deltas(reply)]
    prompt_chars = sum(len(_text_of(m)) for m in messages)
    events.append(
        provider_done(
            "stop",
            {
                "inputTokens": prompt_chars // 4,
                "outputTokens": len(reply) // 4,
                "totalTokens": prompt_chars // 4 + len(reply) // 4,
            },
        )
    )
    return events


def _tool_call(spec: str, turn: int) -> list[ProviderEvent]:
    name, _, raw = spec.strip().partition(" ")
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError:
        arguments = None
    if not name or not isinstance(arguments, dict):
        return [
            provider_error(
                "mock:tool needs a tool name and a JSON object: mock:tool NAME {...}",
                MOCK_ERROR_CODE,
            )
        ]
    return [provider_tool_call(f"mock_call_{turn}", name, arguments), provider_done("tool_calls")]


def create_echo_provider(*, delay_ms: int = 0) -> MockProvider:
    # A long CLI session has no reader for recorded requests: keep none.
    return create_mock_provider(_echo, delay_ms=delay_ms, name=MOCK_PROVIDER_NAME, record=False)
