"""Secrets configured on the agent never reach events, stored entries or errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runtime_helpers import make_agent, record

from prism.errors import ProviderError
from prism.providers import provider_done, provider_error, provider_text_delta, provider_tool_call
from prism.tools import define_tool

pytestmark = [
    pytest.mark.anyio,
]

SECRET = "sk-test-0123456789abcdef"


async def test_secret_is_redacted_from_events_entries_and_errors() -> None:
    agent = make_agent(
        [
            [
                provider_text_delta(f"key is {SECRET}"),
                provider_tool_call("c1", "leak"),
                provider_done(),
            ],
            [provider_error(f"auth failed for {SECRET}", "invalid_request")],
        ],
        tools=[define_tool("leak", lambda a, c: {"token": SECRET})],
        secrets=[SECRET],
    )
    session = agent.create_session()
    events = record(session)
    with pytest.raises(ProviderError) as caught:
        await session.run(f"my key: {SECRET}")
    assert SECRET not in str(caught.value)
    assert SECRET not in json.dumps(events)
    stored: list[Any] = await session.entries()
    assert SECRET not in json.dumps(stored)
    assert "[REDACTED]" in json.dumps(stored)


async def test_run_result_reports_the_redacted_stored_messages() -> None:
    agent = make_agent([provider_text_delta(f"echo {SECRET}"), provider_done()], secrets=[SECRET])
    session = agent.create_session()
    result = await session.run("hi")
    assert SECRET not in json.dumps(result.to_json())
    assert SECRET not in json.dumps(result.messages)
    assert result.text == "echo [REDACTED]"
