"""Session-wide fakellm and llmock processes (see servers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.chaos.servers import LLMockControl, ServerProcess, start_fakellm, start_llmock

# Rules for fakellm (first match wins). Conversations are keyed by the first
# user message, so each test uses its own prompt.
FAKELLM_RULES = """\
version: 1
rules:
  - name: unicode
    when: {messages_contain: "unicode please"}
    respond: {content: "héllo wörld — 日本語 테스트 🎉 «ok» done"}
  - name: weather-answer
    when: {messages_contain: "weather round", tool_result_contains: "sunny"}
    respond: {content: "Paris is sunny at 21 degrees; it is 14:00 there."}
  - name: weather-calls
    when: {messages_contain: "weather round"}
    respond:
      tool_calls:
        - {name: get_weather, arguments: {city: "Paris", units: "metric", note: "naïve café ☕"}}
        - {name: get_time, arguments: {zone: "Europe/Paris"}}
  - name: parallel-calls
    when: {messages_contain: "parallel please"}
    respond:
      tool_calls:
        - {name: get_weather, arguments: {city: "Zürich", days: [1, 2, 3], nested: {a: {b: "c"}}}}
        - {name: get_time, arguments: {zone: "Asia/Tokyo"}}
        - {name: get_weather, arguments: {}}
"""


@pytest.fixture(scope="session")
def fakellm_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir: Path = tmp_path_factory.mktemp("fakellm")
    server = start_fakellm(FAKELLM_RULES, workdir)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llmock_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_llmock(tmp_path_factory.mktemp("llmock"))
    yield server
    server.stop()


@pytest.fixture
def chaos(llmock_process: ServerProcess) -> Iterator[LLMockControl]:
    """The llmock control API, with an empty journal and no queued faults."""
    control = LLMockControl(llmock_process)
    control.reset()
    yield control
    control.reset()
    control.close()
