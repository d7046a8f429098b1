"""What was sent, made visible: Prism's per-layer loggers.

Nothing prints by default (a NullHandler sits on the ``prism`` logger).
``enable_logging`` turns the records on, here into a buffer, with the
agent's redactor on the handler: a secret never reaches a record.
"""

from __future__ import annotations

import io
import logging

import anyio

from prism import create_agent, create_mock_provider
from prism.log import disable_logging, enable_logging
from prism.providers import provider_done, provider_text_delta

SECRET = "sk-example-4f9a2c7e1b"


async def main() -> None:
    provider = create_mock_provider([provider_text_delta(f"noted: {SECRET}"), provider_done()])
    agent = create_agent(
        model={"provider": "mock", "model": "demo"}, provider=provider, secrets=[SECRET]
    )
    buffer = io.StringIO()
    handler = enable_logging(logging.DEBUG, stream=buffer, redactor=agent.config.redactor)
    try:
        await agent.create_session("logged").run(f"my key is {SECRET}")
    finally:
        disable_logging(handler)
    lines = buffer.getvalue().splitlines()
    events = [line.split()[4] for line in lines if " prism.runtime " in line]
    print("runtime records:", events)
    print("secret in the log:", any(SECRET in line for line in lines))
    print("masked:", any("[REDACTED]" in line for line in lines))


anyio.run(main)
