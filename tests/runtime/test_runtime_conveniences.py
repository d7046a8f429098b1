"""``compaction=True`` compacts, ``run_sync`` runs without an event loop."""

from __future__ import annotations

import pytest
from runtime_helpers import echo_tool

from prism.errors import ConfigError
from prism.providers import create_mock_provider, provider_done, provider_text_delta
from prism.runtime import create_agent
from prism.runtime.options import DEFAULT_COMPACTION_TRIGGER

FINAL = [provider_text_delta("done"), provider_done()]
SMALL = {"provider": "mock", "model": "small", "limits": {"contextWindow": 2000}}


def reply(request: object) -> list[object]:
    return FINAL


@pytest.mark.anyio
async def test_compaction_true_compacts_near_the_window() -> None:
    agent = create_agent(model=SMALL, provider=create_mock_provider(reply), compaction=True)
    assert agent.config.compaction is not None
    assert agent.config.compaction.trigger == DEFAULT_COMPACTION_TRIGGER
    session = agent.create_session()
    for n in range(40):
        await session.run(f"message number {n} " + "words " * 20)
        if any(e["kind"] == "compaction" for e in await session.entries()):
            break
    else:
        pytest.fail("compaction=True never compacted a session that outgrew the window")
    # Compacted before the window was full: the summary plus recent turns fit.
    compaction = next(e for e in await session.entries() if e["kind"] == "compaction")
    assert compaction["data"]["trigger"] == "auto"


def test_compaction_true_without_a_known_window_says_what_to_pass() -> None:
    with pytest.raises(ConfigError, match=r"compaction=True .*contextWindow.*threshold_entries"):
        create_agent(
            model={"provider": "mock", "model": "demo"},
            provider=create_mock_provider(reply),
            compaction=True,
        )


@pytest.mark.anyio
async def test_run_option_compaction_true_checks_the_run_model() -> None:
    agent = create_agent(
        model={"provider": "mock", "model": "demo"}, provider=create_mock_provider(reply)
    )
    session = agent.create_session()
    with pytest.raises(ConfigError, match="compaction=True"):
        await session.run("hi", compaction=True)
    assert not session.is_running
    result = await session.run("hi", compaction=True, model=SMALL)
    assert result.text == "done"


def test_run_sync_for_scripts() -> None:
    agent = create_agent(
        model=SMALL, provider=create_mock_provider([FINAL, FINAL, FINAL]), tools=[echo_tool()]
    )
    session = agent.create_session("script")
    assert session.run_sync("hi").text == "done"
    assert session.run_sync("again", max_tool_rounds=2).text == "done"
    assert agent.run_sync("other", session_id="script2").session_id == "script2"
    assert agent.store is not None


@pytest.mark.anyio
async def test_run_sync_inside_an_event_loop_is_refused() -> None:
    session = create_agent(model=SMALL, provider=create_mock_provider(reply)).create_session()
    with pytest.raises(
        ConfigError, match=r"run_sync cannot run inside a running asyncio event loop"
    ):
        session.run_sync("hi")
    assert not session.is_running
