"""Shared fakes for the OpenAI-compatible adapter tests: SSE streams served by
httpx.MockTransport, split at awkward places like real networks do."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx

from prism.providers.openai_compatible import (
    OpenAICompatibleProvider,
    create_openai_compatible_provider,
)
from prism.security import NOOP_REDACTOR

CANARY_KEY = "sk-canary-7f3a9c2e5b1d4f6a8c0e"
BASE_URL = "https://llm.example.invalid/v1"


def sse_lines(chunks: Iterable[Any], *, done: bool = True) -> bytes:
    """Encode chunk dicts (or raw strings) as an SSE body."""
    out = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk)
        out.append(f"data: {data}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


class ByteStream(httpx.AsyncByteStream):
    """Yields pieces, then optionally raises (a mid-stream disconnect);
    records whether httpx closed it."""

    def __init__(
        self,
        pieces: list[bytes],
        *,
        fail_with: Exception | None = None,
        hang: Callable[[], Any] | None = None,
    ) -> None:
        self.pieces = pieces
        self.fail_with = fail_with
        self.hang = hang
        self.closed = False
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            self.sent += 1
            yield piece
        if self.hang is not None:
            await self.hang()
        if self.fail_with is not None:
            raise self.fail_with

    async def aclose(self) -> None:
        self.closed = True


def chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    reasoning_key: str = "reasoning_content",
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta[reasoning_key] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "demo-model",
        "choices": [] if no_choices else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


class Recorder:
    """A MockTransport handler that records requests and replays responses in order."""

    def __init__(self, *responses: httpx.Response | Exception | Callable[[], httpx.Response]):
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.bodies.append(json.loads(request.content))
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx.Response):
            return item()
        return item


def sse_response(
    body: bytes | ByteStream, *, status: int = 200, headers: dict[str, str] | None = None
) -> httpx.Response:
    stream = body if isinstance(body, ByteStream) else ByteStream([body])
    return httpx.Response(
        status,
        headers={"content-type": "text/event-stream", **(headers or {})},
        stream=stream,
    )


def make_provider(
    handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any
) -> OpenAICompatibleProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("api_key", CANARY_KEY)
    kwargs.setdefault("redactor", NOOP_REDACTOR)
    return create_openai_compatible_provider(base_url=BASE_URL, http_client=client, **kwargs)


def simple_request(text: str = "Hi") -> dict[str, Any]:
    return {
        "model": {"provider": "openai-compatible", "model": "demo-model"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }


async def collect(provider: Any, request: Any) -> list[dict[str, Any]]:
    return [event async for event in provider.generate(request)]
