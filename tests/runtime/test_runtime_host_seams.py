"""Host seams (issue 14): the host's input and prompt builders assemble every
turn, ``auto_compact()`` is public, ``set_model`` switches provider through
the agent's registry, and ``run``/``stream`` share one set of options."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from runtime_helpers import MODEL, make_agent

from prism.assembly import create_default_input_builder
from prism.contracts import Message
from prism.errors import ConfigError, UnknownNameError
from prism.providers import (
    create_mock_provider,
    create_provider_registry,
    provider_done,
    provider_text_delta,
)
from prism.runtime import create_agent
from prism.runtime.options import RUN_OPTION_NAMES

pytestmark = pytest.mark.anyio

FINAL = [provider_text_delta("done"), provider_done()]


def reply(request: Any) -> list[Any]:
    return FINAL


class TaggingInputBuilder:
    """Builds with the defaults, then adds one user message the host owns."""

    def __init__(self) -> None:
        self.calls = 0
        self.inner = create_default_input_builder()

    async def build(self, input: Any = None, **context: Any) -> list[Message]:
        self.calls += 1
        messages = await self.inner.build(input, **context)
        return [*messages, {"role": "user", "content": [{"type": "text", "text": "[host]"}]}]


class UpperPromptBuilder:
    async def build(
        self,
        messages: Sequence[Message],
        *,
        context_blocks: Sequence[Any] = (),
        skills: Sequence[Any] = (),
        tools: Sequence[Any] = (),
    ) -> list[Message]:
        system: Message = {"role": "system", "content": [{"type": "text", "text": "HOST PROMPT"}]}
        return [system, *messages]


async def test_the_hosts_builders_assemble_every_turn() -> None:
    provider = create_mock_provider(reply)
    builder = TaggingInputBuilder()
    agent = make_agent(
        None, provider=provider, input_builder=builder, prompt_builder=UpperPromptBuilder()
    )
    session = agent.create_session()
    await session.run("hi")
    await session.run("again")
    assert builder.calls == 2
    for request in provider.requests:
        texts = [m["content"][0]["text"] for m in request["messages"]]
        assert texts[0] == "HOST PROMPT" and texts[-1] == "[host]"
    # Nothing the builders add is stored: the branch holds only what happened.
    assert [m["content"][0]["text"] for m in await session.messages()] == [
        "hi",
        "done",
        "again",
        "done",
    ]


def test_builders_are_checked_when_the_agent_is_created() -> None:
    with pytest.raises(ConfigError, match="input_builder must have an async build"):
        make_agent(FINAL, input_builder=object())
    with pytest.raises(ConfigError, match="prompt_builder must have an async build"):
        make_agent(FINAL, prompt_builder="nope")
    with pytest.raises(ConfigError, match="input_builder cannot be combined with attention"):
        create_agent(
            model={**MODEL, "limits": {"contextWindow": 100_000}},
            provider=create_mock_provider(FINAL),
            input_builder=TaggingInputBuilder(),
            attention_compiler=True,
        )


async def test_auto_compact_asks_the_trigger_like_a_run_does() -> None:
    agent = make_agent(reply, compaction={"thresholdEntries": 3})
    session = agent.create_session()
    assert await session.auto_compact() is None  # empty branch: nothing to do
    agent_without = make_agent(reply)
    other = agent_without.create_session()
    await other.run("one")
    assert await other.auto_compact() is None  # no trigger configured
    await other.run("two")
    entry = await other.auto_compact(trigger={"type": "threshold_entries", "entries": 3})
    assert entry is not None and entry["kind"] == "compaction"
    assert entry["data"]["trigger"] == "auto"  # type: ignore[typeddict-item]
    # The last entry is a compaction now: asking again does not compact twice.
    assert await other.auto_compact(trigger={"type": "threshold_entries", "entries": 1}) is None
    with pytest.raises(ConfigError, match="unknown compaction option"):
        await other.auto_compact(threshold=2)
    assert not other.is_running


async def test_set_model_switches_provider_through_the_registry() -> None:
    small = create_mock_provider(reply, name="small-co")
    big = create_mock_provider(
        lambda request: [provider_text_delta("big answer"), provider_done()], name="big-co"
    )
    registry = create_provider_registry()
    registry.register_provider(big)
    registry.register_model({"provider": "big-co", "model": "huge", "limits": {"contextWindow": 9}})
    agent = create_agent(
        model={"provider": "small-co", "model": "s"}, provider=small, providers=registry
    )
    session = agent.create_session()
    assert (await session.run("hi")).text == "done"

    entry = await session.set_model("huge", provider="big-co")
    assert entry["model"]["limits"] == {"contextWindow": 9}  # type: ignore[typeddict-item]
    assert (await session.run("hi")).text == "big answer"
    assert len(big.requests) == 1 and len(small.requests) == 1

    await session.set_model({"provider": "small-co", "model": "s2"})  # back to the agent's own
    assert (await session.run("hi")).text == "done"
    with pytest.raises(UnknownNameError, match=r"'nowhere'.*registered: \['big-co'\]"):
        await session.set_model("m", provider="nowhere")
    assert session.current_model["model"] == "s2"  # nothing was stored


async def test_switching_provider_without_a_registry_is_refused() -> None:
    session = make_agent(reply).create_session()
    before = await session.entries()
    with pytest.raises(ConfigError, match=r"create_agent\(providers=registry\)"):
        await session.set_model({"provider": "elsewhere", "model": "m"})
    with pytest.raises(ConfigError, match="run option model names provider 'elsewhere'"):
        await session.run("hi", model={"provider": "elsewhere", "model": "m"})
    assert await session.entries() == before
    entry = await session.set_model("other-model")  # same provider, new id
    assert entry["model"] == {"provider": "mock", "model": "other-model"}  # type: ignore[typeddict-item]


async def test_run_and_stream_share_their_options() -> None:
    assert RUN_OPTION_NAMES == {
        "model",
        "system",
        "retry",
        "compaction",
        "max_tool_rounds",
        "metadata",
        "attention",
        "output_type",
        "output_mode",
        "durable",
        "persist_session_state",
    }
    session = make_agent(reply).create_session()
    with pytest.raises(ConfigError, match=r"unknown run option\(s\) \['max_rounds'\]"):
        await session.run("hi", max_rounds=2)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="unknown run option"):
        async with session.stream("hi", sytem="x"):  # type: ignore[call-arg]
            pass
    async with session.stream("hi", system="be brief", max_tool_rounds=1) as events:
        async for _ in events:
            pass
    assert events.result is not None and events.result.text == "done"
    assert not session.is_running
