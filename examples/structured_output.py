"""Structured output: run(..., output_type=T) returns a validated value.

Two providers, two ways of asking: the OpenAI-compatible adapter (served here
by httpx.MockTransport, no network) gets a JSON-schema response format; the
mock provider, which has none, gets a final tool to call. An invalid first
answer goes back to the model with the problem and the run goes on.
"""

from __future__ import annotations

import json

import anyio
import httpx
from pydantic import BaseModel, Field

from prism import create_mock_provider
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR


class Weather(BaseModel):
    city: str
    celsius: float = Field(ge=-90, le=60)


def fake_server(replies: list[str], bodies: list[dict[str, object]]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        chunks = [
            {"choices": [{"index": 0, "delta": {"content": replies[len(bodies) - 1]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return httpx.Response(
            200, content=sse.encode(), headers={"content-type": "text/event-stream"}
        )

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def main() -> None:
    bodies: list[dict[str, object]] = []
    server = fake_server(
        ['{"city": "Oslo", "celsius": 451}', '{"city": "Oslo", "celsius": 4.5}'], bodies
    )
    provider = create_openai_compatible_provider(
        base_url="http://localhost:8000/v1", http_client=server, redactor=NOOP_REDACTOR
    )
    agent = create_agent(
        model={"provider": "openai-compatible", "model": "local"}, provider=provider
    )
    result = await agent.create_session("weather").run("Weather in Oslo?", output_type=Weather)
    print("response_format sent:", bodies[0]["response_format"]["type"])  # type: ignore[index]
    print("requests:", len(bodies), "->", repr(result.output))

    mock = create_mock_provider(
        [
            [
                provider_tool_call("c1", "final_result", {"city": "Bergen", "celsius": 9}),
                provider_done("tool_use"),
            ]
        ]
    )
    agent = create_agent(model={"provider": "mock", "model": "demo"}, provider=mock)
    result = await agent.create_session("weather").run("Weather in Bergen?", output_type=Weather)
    print("tool offered to the mock:", [t["name"] for t in mock.requests[0]["tools"]])
    print("mock ->", repr(result.output))

    # Any type a pydantic TypeAdapter accepts, in the mode a model without
    # tools or JSON mode needs: the schema goes into the instructions.
    primes = create_mock_provider([provider_text_delta("[2, 3, 5]"), provider_done()])
    agent = create_agent(model={"provider": "mock", "model": "demo"}, provider=primes)
    result = await agent.create_session().run(
        "The first three primes?", output_type=list[int], output_mode="prompted"
    )
    print("prompted list[int] ->", result.output)


anyio.run(main)
