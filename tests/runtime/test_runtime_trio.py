"""The runtime is anyio-only: the same session works under trio, abort included."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from runtime_helpers import make_agent

from prism.errors import RunAbortedError
from prism.providers import (
    provider_done,
    provider_text_delta,
    provider_tool_call_delta,
)

pytest.importorskip("trio")


def test_tool_round_and_abort_under_trio() -> None:
    async def main() -> list[str]:
        agent = make_agent(
            [
                [
                    provider_tool_call_delta(0, name="echo", arguments_delta='{"k": 1}'),
                    provider_done(),
                ],
                [provider_text_delta("done"), provider_done()],
                [provider_text_delta("a"), provider_text_delta("b"), provider_done()],
            ]
        )
        session = agent.create_session()
        result = await session.run("go")
        calls = [b for m in result.messages for b in m["content"] if b["type"] == "tool_call"]
        answers = [b for m in result.messages for b in m["content"] if b["type"] == "tool_result"]
        # A delta without an id gets a generated one, shared by call and result.
        assert calls[0]["id"].startswith("call_") and answers[0]["toolCallId"] == calls[0]["id"]

        def stop(event: dict[str, Any]) -> None:
            if event["type"] == "message_delta":
                session.abort()

        session.subscribe(stop)
        with pytest.raises(RunAbortedError):
            await session.run("again")
        return [m["role"] for m in await session.messages()]

    roles = anyio.run(main, backend="trio")
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
