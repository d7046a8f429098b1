"""An agent on the OpenAI-compatible adapter pointed at a running llmock, and
one run's outcome as the client saw it (result or error, and every event)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from tests.chaos.servers import ServerProcess

from prism.errors import ProviderError
from prism.providers.openai_compatible import (
    OpenAICompatibleProvider,
    RequestPolicy,
    create_openai_compatible_provider,
)
from prism.retry import RetryOptions
from prism.runtime import create_agent
from prism.runtime.result import RunResult
from prism.security import NOOP_REDACTOR
from prism.tools import define_tool

MODEL = {"provider": "openai-compatible", "model": "gpt-4o"}
KEY = "sk-chaos-suite-not-a-real-key-0002"
# llmock's "static" style answers every text turn with this, streamed as: a
# role chunk (#0), four content chunks (#1-#4), the finish reason (#5), the
# usage chunk (#6) and [DONE] (#7). A fault "@n" hits chunk #n before it goes
# out, so @0 and @1 strike before any text, @2 and later after it started.
ANSWER = "Mock response from gpt-4o."
# Short enough that a stall ends the attempt fast, long enough for a loaded
# 2-core CI machine to stream a normal chunk.
READ_TIMEOUT_S = 0.5
# The default policy (3 attempts, 100 ms base, jitter of 75-100 % of each
# backoff) with a fixed seed: each run's agent starts the sequence afresh, so
# the waits are the same in every run. They grow whatever the seed (the
# second wait is at least 150 ms, the first at most 100 ms), as llmock's
# no_backoff check wants.
RETRY_SEED = 11


@dataclass
class Outcome:
    result: RunResult | None
    error: dict[str, Any] | None
    events: list[dict[str, Any]] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def streamed_text(self) -> str:
        deltas = [e["delta"] for e in self.of_type("message_delta")]
        return "".join(d["text"] for d in deltas if d["type"] == "text")


def weather_tool(calls: list[dict[str, Any]]) -> Any:
    def get_weather(args: dict[str, Any], ctx: Any) -> str:
        calls.append(args)
        return "sunny"

    return define_tool(
        "get_weather",
        get_weather,
        description="the weather for a city",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )


def make_provider(server: ServerProcess, *, require_done: bool = True) -> OpenAICompatibleProvider:
    return create_openai_compatible_provider(
        base_url=server.url + "/v1",
        api_key=KEY,
        timeout=httpx.Timeout(10.0, read=READ_TIMEOUT_S),
        request_policy=RequestPolicy(require_done=require_done),
        redactor=NOOP_REDACTOR,
    )


async def run_agent(
    provider: OpenAICompatibleProvider,
    prompt: str,
    *,
    tools: tuple[Any, ...] = (),
    retry: RetryOptions | None = None,
) -> Outcome:
    """One run with the real clock (llmock times the gaps between attempts)."""
    agent = create_agent(
        model=MODEL,
        provider=provider,
        tools=list(tools),
        retry=retry or RetryOptions(seed=RETRY_SEED),
        max_tool_rounds=3,
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    try:
        result = await session.run(prompt)
    except ProviderError as exc:
        return Outcome(None, dict(exc.info), events)
    return Outcome(result, None, events)


# Findings no run may ever earn: the client waits for Retry-After, never
# retries a 4xx, caps its attempts, backs off, and times out stalled reads.
NEVER = frozenset(
    {"retry_after_ignored", "retried_non_retryable", "retry_storm", "no_backoff", "no_read_timeout"}
)


def check_finding(finding: dict[str, Any], outcome: Outcome) -> None:
    """Hold one llmock finding against what the client did in that run.

    llmock sees only the wire: when the last attempt of a call was faulty and
    no retry followed, it infers the client accepted the fault. The client's
    own outcome says whether it did."""
    code = finding["code"]
    assert code not in NEVER, finding
    retried_codes = [e["error"]["code"] for e in outcome.of_type("retry_scheduled")]
    if code == "truncated_stream_accepted":
        # Not accepted: the run failed with stream_incomplete.
        assert outcome.result is None, finding
        assert outcome.error is not None and outcome.error["code"] == "stream_incomplete"
    elif code == "malformed_chunk_ignored":
        # Not ignored: the run failed on it, or the client stopped reading and
        # retried (llmock only missed the retry because it overlapped the end
        # of the broken response on the server side).
        if outcome.result is None:
            assert outcome.error is not None and outcome.error["code"] == "malformed_chunk"
        else:
            assert "malformed_chunk" in retried_codes, finding
    elif code == "gave_up":
        # A transient fault not retried: only allowed once output had started
        # (a retry would duplicate streamed text) or the attempts ran out.
        assert outcome.result is None and outcome.error is not None, finding
        assert outcome.error["retryable"] is True
        refused = (outcome.error.get("details") or {}).get("retry", {}).get("refused")
        assert outcome.streamed_text or refused == "max_attempts", finding
    else:
        raise AssertionError(f"unexpected llmock finding {finding}")
