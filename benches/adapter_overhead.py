"""Per-event overhead of the native adapters next to the OpenAI-compatible one.

Each adapter streams the same answer, N text deltas, from bytes served by
httpx.MockTransport (no network: what is measured is decoding and event
building), plus its own framing (Chat Completions chunks and ``[DONE]``;
Anthropic's typed events; Responses' events). Reported: microseconds per
text delta (median of the repeats) and the ratio to the OpenAI-compatible
adapter. Target: each ratio <= 1.2.

    python -m benches.adapter_overhead [--deltas 2000] [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx

from prism.providers.anthropic import create_anthropic_provider
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.providers.openai_responses import create_openai_responses_provider
from prism.security import NOOP_REDACTOR

KEY = "sk-bench-not-a-real-key-0001"
REQUEST: dict[str, Any] = {
    "model": {"provider": "bench", "model": "bench-1"},
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
}


def _sse(data: Any, event: str | None = None) -> str:
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {json.dumps(data, separators=(',', ':'))}\n\n"


def chat_body(pieces: list[str]) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _sse({"id": "c", "object": "chat.completion.chunk", "model": "m",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})  # fmt: skip

    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": p}) for p in pieces]
    parts.append(chunk({}, "stop"))
    parts.append(
        _sse(
            {
                "id": "c",
                "choices": [],
                "usage": {"prompt_tokens": 5, "completion_tokens": len(pieces)},
            }
        )
    )
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def anthropic_body(pieces: list[str]) -> bytes:
    def event(data: dict[str, Any]) -> str:
        return _sse(data, data["type"])

    parts = [
        event(
            {
                "type": "message_start",
                "message": {"id": "m", "usage": {"input_tokens": 5, "output_tokens": 1}},
            }
        )
    ]
    parts.append(
        event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
    )
    parts += [
        event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        )
        for p in pieces
    ]
    parts.append(event({"type": "content_block_stop", "index": 0}))
    parts.append(
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": len(pieces)},
            }
        )
    )
    parts.append(event({"type": "message_stop"}))
    return "".join(parts).encode()


def responses_body(pieces: list[str]) -> bytes:
    def event(data: dict[str, Any]) -> str:
        return _sse(data, data["type"])

    parts = [
        event(
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {"id": "r", "status": "in_progress"},
            }
        )
    ]
    parts.append(
        event(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "message", "id": "msg"},
            }
        )
    )
    parts += [
        event({"type": "response.output_text.delta", "sequence_number": i, "item_id": "msg", "output_index": 0,
               "content_index": 0, "delta": p, "logprobs": []})
        for i, p in enumerate(pieces)
    ]  # fmt: skip
    usage = {"input_tokens": 5, "output_tokens": len(pieces), "total_tokens": 5 + len(pieces)}
    parts.append(
        event(
            {
                "type": "response.completed",
                "response": {"id": "r", "status": "completed", "usage": usage},
            }
        )
    )
    return "".join(parts).encode()


def transport(body: bytes) -> httpx.MockTransport:
    chunks = [body[i : i + 4096] for i in range(0, len(body), 4096)]

    class Stream(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for chunk in chunks:
                yield chunk

    return httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Stream()
        )
    )


def providers(pieces: list[str]) -> dict[str, Callable[[], Any]]:
    def client(body: bytes) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=transport(body))

    return {
        "openai_compatible": lambda: create_openai_compatible_provider(
            base_url="https://x.invalid/v1",
            api_key=KEY,
            http_client=client(chat_body(pieces)),
            redactor=NOOP_REDACTOR,
        ),
        "anthropic": lambda: create_anthropic_provider(
            base_url="https://x.invalid",
            api_key=KEY,
            http_client=client(anthropic_body(pieces)),
            redactor=NOOP_REDACTOR,
        ),
        "openai_responses": lambda: create_openai_responses_provider(
            base_url="https://x.invalid/v1",
            api_key=KEY,
            http_client=client(responses_body(pieces)),
            redactor=NOOP_REDACTOR,
        ),
    }


async def time_one(factory: Callable[[], Any], deltas: int) -> float:
    provider = factory()
    started = time.perf_counter()
    seen = 0
    async for event in provider.generate(REQUEST):
        seen += event["type"] == "content_delta"
        if event["type"] == "error":
            raise RuntimeError(event["error"]["message"])
    elapsed = time.perf_counter() - started
    if seen != deltas:
        raise RuntimeError(f"saw {seen} deltas, expected {deltas}")
    return elapsed / deltas * 1e6


async def measure(deltas: int, repeats: int) -> dict[str, float]:
    pieces = [f"tok{i} " for i in range(deltas)]
    factories = providers(pieces)
    samples: dict[str, list[float]] = {name: [] for name in factories}
    for _ in range(repeats):  # interleaved, so machine noise hits every adapter alike
        for name, factory in factories.items():
            samples[name].append(await time_one(factory, deltas))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    medians = anyio.run(measure, args.deltas, args.repeats)
    base = medians["openai_compatible"]
    for name, value in medians.items():
        print(f"{name:18s} {value:7.2f} us/event   {value / base:5.2f}x")


if __name__ == "__main__":
    main()
