"""agent.with_provider: a copy for tests whose turns go to another provider
and which shares nothing mutable with the original."""

from __future__ import annotations

from typing import Any

import pytest

from prism import ConfigError, create_middleware_registry, create_mock_provider, define_tool
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.stores import MemorySessionStore


def reply(text: str) -> Any:
    return create_mock_provider([provider_text_delta(text), provider_done("stop")])


@pytest.mark.anyio
async def test_the_copy_talks_to_the_new_provider_and_shares_nothing_mutable() -> None:
    production = reply("production")
    store = MemorySessionStore()
    middleware = create_middleware_registry()
    original = create_agent(
        model={"provider": "mock", "model": "big"},
        provider=production,
        tools=[define_tool("echo", lambda args, ctx: args)],
        middleware=middleware,
        store=store,
        system="Be brief.",
    )
    heard: list[Any] = []
    original.subscribe(heard.append)

    test_provider = reply("test")
    copy = original.with_provider(test_provider)
    copy.config.tools.register(define_tool("extra", lambda args, ctx: 1))

    async def tag(request: Any, next: Any) -> Any:
        return await next({**request, "metadata": {**request["metadata"], "tested": True}})

    assert copy.config.middleware is not None
    copy.config.middleware.use("provider_request", tag)

    result = await copy.create_session("s").run("hi")
    assert result.text == "test"
    assert production.requests == [] and len(test_provider.requests) == 1
    sent = test_provider.requests[0]
    assert [t["name"] for t in sent["tools"]] == ["echo", "extra"]
    assert sent["metadata"]["tested"] is True
    assert sent["messages"][0]["content"][0]["text"].endswith("Be brief.")
    # Nothing leaked back into the original.
    assert original.config.tools.names() == ["echo"]
    assert not middleware.has("provider_request")
    assert heard == []
    assert await original.create_session("s").entries() == []
    assert copy.store is not store


@pytest.mark.anyio
async def test_model_and_store_can_be_given() -> None:
    store = MemorySessionStore()
    original = create_agent(model={"provider": "mock", "model": "big"}, provider=reply("x"))
    provider = reply("small")
    copy = original.with_provider(
        provider, model={"provider": "mock", "model": "small"}, store=store
    )
    await copy.create_session("s").run("hi")
    assert provider.requests[0]["model"]["model"] == "small"
    assert copy.store is store and len(await copy.create_session("s").entries()) == 2
    assert original.config.model["model"] == "big"


def test_bad_arguments_are_config_errors() -> None:
    agent = create_agent(model={"provider": "mock", "model": "m"}, provider=reply("x"))
    with pytest.raises(ConfigError, match="needs an AIProvider"):
        agent.with_provider(object())
    with pytest.raises(ConfigError, match="store must implement SessionStore"):
        agent.with_provider(reply("y"), store=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"with_provider model\.provider"):
        agent.with_provider(reply("y"), model={"model": "m"})
