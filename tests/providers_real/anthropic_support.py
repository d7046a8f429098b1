"""Anthropic Messages streams for httpx.MockTransport tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx
from providers_real_support import CANARY_KEY

from prism.providers.anthropic import AnthropicProvider, create_anthropic_provider
from prism.security import NOOP_REDACTOR

BASE = "https://anthropic.example.invalid"


def events_body(events: Iterable[dict[str, Any]], *, named: bool = True) -> bytes:
    out = []
    for event in events:
        prefix = f"event: {event['type']}\n" if named else ""
        out.append(f"{prefix}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    if usage is not None:
        message["usage"] = usage
    return {"type": "message_start", "message": message}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": stop_reason}}
    if usage is not None:
        event["usage"] = usage
    return event


END = {"type": "message_stop"}

USAGE_START = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 100,
    "cache_read_input_tokens": 900,
    "output_tokens": 1,
}


def text_stream(text: str = "Hello there", stop_reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        start(USAGE_START),
        block_start(0, {"type": "text", "text": ""}),
        {"type": "ping"},
        *(delta(0, type="text_delta", text=piece) for piece in _pieces(text)),
        stop(0),
        message_delta(stop_reason, {"output_tokens": 7}),
        END,
    ]


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [words[0], *(" " + w for w in words[1:])]


def make_anthropic(
    handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any
) -> AnthropicProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("api_key", CANARY_KEY)
    kwargs.setdefault("redactor", NOOP_REDACTOR)
    return create_anthropic_provider(base_url=BASE, http_client=client, **kwargs)


def request(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    msgs = list(messages) or [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    return {
        "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "messages": msgs,
        **extra,
    }
