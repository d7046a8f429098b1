"""The OpenAI-compatible adapter against a fake server (httpx.MockTransport).

Runs offline: the transport replays a Chat Completions SSE stream, then a 429.
Swap the transport for a real client (or drop ``http_client``) and pass a real
key to talk to an actual API.

    .venv/bin/python examples/openai_compatible_mock.py
"""

from __future__ import annotations

import json

import anyio
import httpx

from prism.providers.packages import OPENAI_PACKAGE, create_openai_provider, estimate_cost
from prism.security import NOOP_REDACTOR, create_credential_chain, env_credential

FAKE_KEY = "sk-example-not-a-real-key-1234"


def sse(*chunks: dict[str, object]) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return ": keep-alive\n\n".join(lines).encode()


def delta(**fields: object) -> dict[str, object]:
    finish = fields.pop("finish", None)
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


STREAM = sse(
    delta(content="Let me check "),
    delta(content="the weather."),
    delta(tool_calls=[{"index": 0, "id": "call_1", "function": {"name": "weather"}}]),
    delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city": "Oslo"}'}}]),
    delta(finish="tool_calls"),
    {
        "choices": [],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": 1000},
        },
    },
)

answers = [
    httpx.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM),
    httpx.Response(
        429,
        headers={"retry-after": "3"},
        json={"error": {"message": f"Rate limit reached for key {FAKE_KEY}"}},
    ),
]


def fake_server(request: httpx.Request) -> httpx.Response:
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    return answers.pop(0)


async def main() -> None:
    # The host decides where keys come from; here a mapping stands in for
    # os.environ (Prism never reads the process environment itself).
    host_env = {"OPENAI_API_KEY": FAKE_KEY}
    provider = create_openai_provider(
        credential=create_credential_chain(env_credential(host_env, "OPENAI_API_KEY")),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake_server)),
        redactor=NOOP_REDACTOR,
    )
    request = {
        "model": OPENAI_PACKAGE.model("gpt-4.1-mini"),
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}],
        "tools": [{"name": "weather", "parameters": {"type": "object"}}],
    }
    text = ""
    async for event in provider.generate(request):  # type: ignore[arg-type]
        if event["type"] == "content_delta":
            text += event["text"]
        elif event["type"] == "tool_call":
            print("tool call:", event["toolCall"])
        elif event["type"] == "done":
            usage = event.get("usage", {})
            print("text:", text)
            print("stop:", event.get("stopReason"), "usage:", usage)
            pricing = OPENAI_PACKAGE.model("gpt-4.1-mini")["pricing"]
            print(f"cost: ${estimate_cost(usage, pricing):.6f}")

    async for event in provider.generate(request):  # type: ignore[arg-type]
        error = event["error"]  # type: ignore[typeddict-item]
        print("error:", error["code"], error["retryAfterMs"], error["message"])


if __name__ == "__main__":
    anyio.run(main)
