"""Contributions are inert until the host resolves them and hands them to
the runtime; then they take part in a real (mock-provider) run."""

from __future__ import annotations

from typing import Any

import pytest

from prism import create_agent, create_mock_provider
from prism.assembly.context import ContextRequest
from prism.extensions import ExtensionAPI, create_extension_kernel, define_extension
from prism.providers import provider_done, provider_text_delta
from prism.security import NOOP_REDACTOR


@pytest.mark.anyio
async def test_resolved_contributions_take_part_in_a_run() -> None:
    calls: list[str] = []

    class Clock:
        name = "clock"

        def provide(self, request: ContextRequest) -> str:
            calls.append("context")
            return "It is noon."

    def setup(api: ExtensionAPI) -> None:
        api.register_context_provider(Clock())
        api.register_provider(create_mock_provider([provider_text_delta("hi"), provider_done()]))
        api.register_model({"provider": "mock", "model": "m1"})

        async def tag(request: dict[str, Any], next_: Any) -> Any:
            calls.append("middleware")
            return await next_(
                {**request, "metadata": {**request.get("metadata", {}), "ext": "clock"}}
            )

        api.use("provider_request", tag)

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([define_extension("clock", setup)])
    assert calls == []  # loading registered things; nothing ran

    provider = kernel.registries.providers.resolve("mock")
    agent = create_agent(
        model=kernel.registries.models.resolve("mock/m1"),
        provider=provider,
        middleware=kernel.middleware,
        context_providers=kernel.registries.context_providers.list(),
    )
    session = agent.create_session()
    await session.run("hello")
    assert calls == ["context", "middleware"]
    request = provider.requests[0]
    assert request["metadata"]["ext"] == "clock"
    assert "It is noon." in repr(request["messages"])
