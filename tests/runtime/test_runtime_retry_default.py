"""Retry is on by default (two retries, like the official OpenAI client) and
``retry=False`` turns it off, on the agent or for one run."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_helpers import kinds, make_agent, record

from prism import ProviderError
from prism.providers import provider_done, provider_error, provider_text_delta
from prism.retry import RetryOptions

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]


async def no_sleep(_: float) -> None:
    return None


async def test_a_scripted_429_no_longer_fails_a_default_run() -> None:
    agent = make_agent([[provider_error("slow down", "429")], FINAL], sleep=no_sleep)
    assert isinstance(agent.config.retry, RetryOptions)
    assert agent.config.retry.max_attempts == 3
    session = agent.create_session()
    events = record(session)
    result = await session.run("hi")
    assert result.text == "done"
    assert kinds(events).count("retry_scheduled") == 1


async def test_the_default_gives_up_after_two_retries() -> None:
    busy = [provider_error("busy", "503")]
    agent = make_agent([busy, busy, busy, FINAL], sleep=no_sleep)
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError, match="not retried"):
        await session.run("hi")
    assert kinds(events).count("retry_scheduled") == 2


async def test_retry_false_on_the_agent_turns_it_off() -> None:
    agent = make_agent([[provider_error("slow down", "429")], FINAL], retry=False, sleep=no_sleep)
    assert agent.config.retry is None
    session = agent.create_session()
    events: list[dict[str, Any]] = record(session)
    with pytest.raises(ProviderError):
        await session.run("hi")
    assert "retry_scheduled" not in kinds(events)


async def test_retry_false_for_one_run_turns_the_default_off() -> None:
    agent = make_agent([[provider_error("slow down", "429")], FINAL], sleep=no_sleep)
    session = agent.create_session()
    with pytest.raises(ProviderError):
        await session.run("hi", retry=False)
