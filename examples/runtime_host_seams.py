"""Host seams: the host's own prompt builder assembles every turn, a session
switches provider through the agent's provider registry, and
``auto_compact()`` asks the compaction trigger on demand. Mock providers, no
network."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from prism import create_mock_provider
from prism.contracts import Message
from prism.providers import create_provider_registry, provider_done, provider_text_delta
from prism.runtime import create_agent


class HousePromptBuilder:
    """Puts the house rules first; a real host might add retrieved notes."""

    async def build(
        self,
        messages: Sequence[Message],
        *,
        context_blocks: Sequence[Any] = (),
        skills: Sequence[Any] = (),
        tools: Sequence[Any] = (),
    ) -> list[Message]:
        rules: Message = {"role": "system", "content": [{"type": "text", "text": "House rules."}]}
        return [rules, *messages]


def answer(text: str) -> Any:
    return lambda request: [provider_text_delta(text), provider_done()]


async def main() -> None:
    local = create_mock_provider(answer("local answer"), name="local")
    remote = create_mock_provider(answer("remote answer"), name="remote")
    registry = create_provider_registry()
    registry.register_provider(remote)
    registry.register_model(
        {"provider": "remote", "model": "big", "limits": {"contextWindow": 128_000}}
    )
    agent = create_agent(
        model={"provider": "local", "model": "small"},
        provider=local,
        prompt_builder=HousePromptBuilder(),
        providers=registry,
        compaction={"trigger": {"type": "threshold_entries", "entries": 4}},
    )
    session = agent.create_session("seams")

    print("turn 1:", (await session.run("hello")).text)
    print("first message sent:", local.requests[0]["messages"][0]["content"][0]["text"])

    await session.set_model("big", provider="remote")
    print("turn 2:", (await session.run("hello again")).text)
    print("model now:", session.current_model["model"], session.current_model["limits"])

    entry = await session.auto_compact()
    print("auto_compact:", entry["kind"] if entry else None)
    print("again:", await session.auto_compact())


anyio.run(main)
