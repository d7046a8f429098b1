"""A process that runs turns on a session whose provider bills twice Prism's
plain estimate, prints the ``tokens_calibrated`` events as JSON lines and
exits (tests/attention/test_calibration_session.py). No calibration file:
whatever a later process knows it reads from the session itself."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from prism.attention import TokenCalibration, split_request_tokens
from prism.providers import create_mock_provider, provider_done, provider_text_delta, provider_usage
from prism.runtime import create_agent
from prism.stores.sqlite import SqliteSessionStore

MODEL = {"provider": "mock", "model": "m", "limits": {"contextWindow": 400000}}


def script(request: dict[str, Any]) -> list[Any]:
    reported = round(split_request_tokens(request).total * 2.0)
    return [
        provider_text_delta("ok"),
        provider_usage(input_tokens=reported, output_tokens=1),
        provider_done("stop"),
    ]


async def main(store_path: str, session_id: str, turns: int) -> None:
    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider(script),
        store=SqliteSessionStore(store_path),
        token_calibration=TokenCalibration(),
        attention_compiler=True,
    )
    session = await agent.open_session(session_id)
    session.subscribe(
        lambda e: (
            print(json.dumps(e), flush=True)
            if e["type"] in ("tokens_calibrated", "attention_compiled", "calibration_warning")
            else None
        )
    )
    for _ in range(turns):
        await session.run("a few words of prose " * 30)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
