"""The recall tool, the om:* commands and the extension, in process."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from prism import create_agent
from prism.errors import CommandError, ConfigError
from prism.extensions import create_extension_kernel, execute_command
from prism.memory import (
    VIEW_USAGE,
    InvalidMemoryIdError,
    create_memory_status_command,
    create_memory_view_command,
    create_observational_memory_commands,
    create_observational_memory_extension,
    create_recall_memory_tool,
)
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.registries import ContributionRegistry
from prism.security import NOOP_REDACTOR, create_redactor
from prism.tools import ToolContext

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parent / "golden"
SECRET = "sk-live-SECRET-0123456789abcdef"


def branch() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / "om_branch.jsonl").read_text().splitlines()]


class Entries:
    """A get_entries callback that records which sessions were asked for."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.calls: list[str] = []

    async def __call__(self, session_id: str) -> list[dict[str, Any]]:
        self.calls.append(session_id)
        return self.entries


async def test_recall_tool_returns_text_and_details() -> None:
    entries = Entries(branch())
    tool = create_recall_memory_tool(entries, redactor=NOOP_REDACTOR)
    value = await tool.execute({"id": "0000000000b1"}, ToolContext(session_id="golden"))
    assert entries.calls == ["golden"]
    assert value["details"]["kind"] == "reflection"
    assert [o["id"] for o in value["details"]["supportingObservations"]] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    assert value["text"].startswith("reflection 0000000000b1:")


@pytest.mark.parametrize("bad", ["", "0000000000B1", "../../etc/passwd", "0000000000b1x"])
async def test_recall_tool_refuses_a_bad_id_before_reading_entries(bad: str) -> None:
    entries = Entries(branch())
    tool = create_recall_memory_tool(entries, redactor=NOOP_REDACTOR)
    with pytest.raises(InvalidMemoryIdError, match="12 lowercase hex"):
        await tool.execute({"id": bad}, ToolContext(session_id="golden"))
    assert entries.calls == []


async def test_recall_tool_in_an_agent_run_is_redacted() -> None:
    entries = branch()
    entries[2]["message"]["content"][0]["text"] += f" ({SECRET})"
    provider = create_mock_provider(
        [
            [provider_tool_call("c1", "recall", {"id": "0000000000a3"}), provider_done()],
            [provider_text_delta("ok"), provider_done()],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[create_recall_memory_tool(lambda _sid: entries, redactor=create_redactor([SECRET]))],
    )
    session = agent.create_session(id="golden")
    result = await session.run("recall it")
    tool_message = result.messages[2]
    text = json.dumps(tool_message)
    assert "e03" in text and "dislike early flights" in text
    assert SECRET not in text and "[REDACTED]" in text


async def test_status_command_counts_the_ledger() -> None:
    runtime = SimpleNamespace(
        status=lambda: {"inFlight": False, "lastError": None, "lastRun": None}
    )
    command = create_memory_status_command(
        Entries(branch()), runtime=runtime, redactor=NOOP_REDACTOR
    )
    registry: ContributionRegistry[Any] = ContributionRegistry("command")
    registry.register(command.name, command)
    result = await execute_command(
        registry, "om:status", {}, SimpleNamespace(session_id="golden"), redactor=NOOP_REDACTOR
    )
    assert result["observations"] == {"recorded": 4, "dropped": 1, "active": 3, "visible": 3}
    assert result["reflections"] == {"recorded": 1, "visible": 1}
    assert result["pool"]["maxTokens"] == 20000 and result["pool"]["targetTokens"] == 10000
    assert result["coverage"]["observedUpToId"] == "e07"
    assert result["runtime"]["inFlight"] is False
    assert result["text"].startswith("observations: 4 recorded, 1 dropped, 3 active, 3 visible")


async def test_view_command_modes_and_usage() -> None:
    status, view = create_observational_memory_commands(Entries(branch()), redactor=NOOP_REDACTOR)
    assert (status.name, view.name) == ("om:status", "om:view")
    ctx = {"sessionId": "golden"}
    visible = await view.run({}, ctx)
    assert visible["mode"] == "visible" and "[0000000000a1]" in visible["text"]
    full = await view.run({"mode": "full"}, ctx)
    assert full["mode"] == "full"
    assert [o["id"] for o in full["observations"]] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    for other in ("all", "FULL", 3):
        assert await view.run({"mode": other}, ctx) == {"text": VIEW_USAGE, "usage": True}


async def test_commands_need_a_session_and_redact() -> None:
    entries = branch()
    entries[4]["data"]["observations"][0]["content"] += f" {SECRET}"
    view = create_memory_view_command(Entries(entries), redactor=create_redactor([SECRET]))
    with pytest.raises(CommandError, match="needs a session"):
        await view.run({}, object())
    shown = await view.run({"mode": "full"}, SimpleNamespace(session=SimpleNamespace(id="golden")))
    assert SECRET not in json.dumps(shown)


async def test_extension_registers_inert_contributions() -> None:
    entries = Entries(branch())
    extension = create_observational_memory_extension(
        recall_tool={"get_entries": entries},
        commands={"get_entries": entries},
        redactor=NOOP_REDACTOR,
    )
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load([extension])
    assert report.ok
    assert kernel.registries.compaction_strategies.names() == ["observational-memory"]
    assert kernel.registries.tools.names() == ["recall"]
    assert kernel.registries.commands.names() == ["om:status", "om:view"]
    assert entries.calls == []  # nothing ran during setup
    quiet = create_extension_kernel(redactor=NOOP_REDACTOR)
    await quiet.load([create_observational_memory_extension(disabled=True, redactor=NOOP_REDACTOR)])
    assert quiet.registries.summary() == {}
    with pytest.raises(ConfigError, match="get_entries"):
        create_observational_memory_extension(
            commands={"get_entries": "nope"}, redactor=NOOP_REDACTOR
        )
    with pytest.raises(ConfigError, match="recall_tool must be a mapping"):
        create_observational_memory_extension(recall_tool=[1], redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
