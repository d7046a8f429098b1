"""The runtime-core pieces use only anyio, so they also run under trio."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.retry import RetryDecision, wait_for_retry
from prism.security import NOOP_REDACTOR
from prism.testing import assert_abort_is_observed, assert_provider_stream_conforms
from prism.tools import ToolContext, create_tool_registry, define_tool, run_tool_calls

pytest.importorskip("trio")

REQUEST: Any = {"model": {"provider": "mock", "model": "m"}, "messages": []}


def test_mock_tools_and_retry_under_trio() -> None:
    async def main() -> list[Any]:
        provider = create_mock_provider([provider_text_delta("a"), provider_done()])
        await assert_provider_stream_conforms(provider, REQUEST, expect_text="a")
        await assert_abort_is_observed(provider, REQUEST, after_events=1)

        async def work(args: dict[str, Any], ctx: ToolContext) -> str:
            await anyio.lowlevel.checkpoint()
            return str(ctx.tool_call_id)

        registry = create_tool_registry(
            [define_tool("work", work), define_tool("lock", work, exclusive=True)]
        )
        calls: list[Any] = [
            {"id": f"c{i}", "name": "lock" if i == 2 else "work", "arguments": {}} for i in range(5)
        ]
        results = await run_tool_calls(
            calls, registry=registry, concurrency=3, redactor=NOOP_REDACTOR
        )
        await wait_for_retry(RetryDecision(True, 0))
        return [r["value"] for r in results]

    assert anyio.run(main, backend="trio") == ["c0", "c1", "c2", "c3", "c4"]
