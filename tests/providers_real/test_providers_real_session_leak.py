"""Canary keys never leave a full session run over the real adapter: a 429 that
echoes the key (retried), a tool call whose result quotes a secret, a final
answer, then compaction. Events, stored entries and the run result are scanned."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from providers_real_support import (
    BASE_URL,
    CANARY_KEY,
    ByteStream,
    Recorder,
    chunk,
    split_every,
    sse_lines,
    sse_response,
)

from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.retry import RetryOptions
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR, callable_credential
from prism.stores import create_memory_session_store
from prism.testing import assert_no_secret_leak
from prism.tools import define_tool

pytestmark = pytest.mark.anyio

TOOL_SECRET = "db-password-canary-91e2c3"


def _script() -> list[Any]:
    """What the fake server answers, in order."""
    rate_limited = httpx.Response(
        429,
        json={"error": {"message": f"Rate limit for key {CANARY_KEY}", "code": "rate_limit"}},
        headers={"retry-after": "0"},
    )
    tool_turn = sse_lines(
        [
            chunk(content="Looking it up."),
            chunk(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "call_1",
                        "function": {"name": "lookup", "arguments": '{"key": "alpha"}'},
                    }
                ],
                finish="tool_calls",
            ),
            chunk(no_choices=True, usage={"prompt_tokens": 20, "completion_tokens": 5}),
        ]
    )
    answer = sse_lines(
        [
            chunk(content="The answer is 42."),
            chunk(finish="stop"),
            chunk(
                no_choices=True,
                usage={
                    "prompt_tokens": 40,
                    "completion_tokens": 6,
                    "prompt_tokens_details": {"cached_tokens": 20},
                },
            ),
        ]
    )
    return [
        rate_limited,
        lambda: sse_response(ByteStream(split_every(tool_turn, 13))),
        lambda: sse_response(ByteStream(split_every(answer, 13))),
    ]


class ScriptedServer(Recorder):
    def __init__(self) -> None:
        super().__init__(*_script())

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if not self.responses:
            raise AssertionError("the session made more requests than scripted")
        self.requests.append(request)
        self.bodies.append(json.loads(request.content))
        item = self.responses.pop(0)
        return item() if callable(item) else item


@pytest.mark.parametrize("agent_knows_the_key", [False, True])
async def test_no_canary_leaks_across_retry_tools_and_compaction(
    agent_knows_the_key: bool,
) -> None:
    server = ScriptedServer()
    # The key comes from a callable resolver, so only the provider knows it
    # unless the host also passes it to the agent.
    provider = create_openai_compatible_provider(
        base_url=BASE_URL,
        credential=callable_credential(lambda: CANARY_KEY),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
        name="canary",
        redactor=NOOP_REDACTOR,
    )

    def lookup(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"value": 42, "note": f"connected with {TOOL_SECRET}"}

    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    store = create_memory_session_store()
    agent = create_agent(
        model={"provider": "canary", "model": "demo-model"},
        provider=provider,
        tools=[
            define_tool(
                "lookup",
                lookup,
                description="Look a key up",
                parameters={"type": "object", "properties": {"key": {"type": "string"}}},
            )
        ],
        retry=RetryOptions(max_attempts=3, base_delay_ms=0, max_delay_ms=0),
        secrets=(CANARY_KEY, TOOL_SECRET) if agent_knows_the_key else (TOOL_SECRET,),
        store=store,
        sleep=fake_sleep,
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)

    result = await session.run("What is alpha?")
    compaction = await session.compact()

    types = [e["type"] for e in events]
    assert "retry_scheduled" in types
    assert "tool_result" in types
    assert types.count("run_started") == 1
    assert result.text == "The answer is 42."
    assert compaction["kind"] == "compaction"
    assert len(server.requests) == 3
    assert all(r.headers["authorization"] == f"Bearer {CANARY_KEY}" for r in server.requests)

    retry = next(e for e in events if e["type"] == "retry_scheduled")
    assert retry["error"]["code"] == "429"
    assert "[REDACTED]" in retry["error"]["message"]

    entries = await store.list(session.id)
    secrets = [CANARY_KEY, TOOL_SECRET]
    assert_no_secret_leak(events, secrets)
    assert_no_secret_leak(entries, secrets)
    # Later requests carry history back to the server: the key only ever
    # travels in the Authorization header, never in a body.
    for body in server.bodies:
        assert CANARY_KEY not in json.dumps(body)


async def test_a_streamed_tool_call_runs_once() -> None:
    server = ScriptedServer()
    server.responses.pop(0)  # no rate limit this time
    calls: list[dict[str, Any]] = []
    provider = create_openai_compatible_provider(
        base_url=BASE_URL,
        api_key=CANARY_KEY,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
        name="canary",
        redactor=NOOP_REDACTOR,
    )
    agent = create_agent(
        model={"provider": "canary", "model": "demo-model"},
        provider=provider,
        tools=[define_tool("lookup", lambda args, ctx: calls.append(args) or {"value": 42})],
    )
    result = await agent.create_session().run("What is alpha?")
    assert result.text == "The answer is 42."
    assert calls == [{"key": "alpha"}]
