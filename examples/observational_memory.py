"""Observational memory: workers record source-backed memory, compaction
renders it without a model call, and the model recalls evidence by id.

Run: .venv/bin/python examples/observational_memory.py

Everything is local: the agent and its memory workers run on mock
providers. The worker "model" is a small function that records one
observation per user message, citing that message's entry id, and one
reflection over them; a real host passes its own provider and a cheap model.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio

from prism import create_agent
from prism.contracts import ProviderRequest
from prism.extensions import execute_command
from prism.memory import (
    create_observational_memory_commands,
    create_observational_memory_compaction_strategy,
    create_observational_memory_runtime,
    create_recall_memory_tool,
)
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.registries import ContributionRegistry
from prism.security import create_redactor

API_KEY = "sk-example-not-a-real-key-123"


def prompt_text(request: ProviderRequest) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    return "".join(b.get("text", "") for b in users[-1]["content"] if b["type"] == "text")


def worker_model(request: ProviderRequest) -> list[Any]:
    """A scripted memory worker: record once, then say it is done."""
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta("Recorded."), provider_done()]
    prompt = prompt_text(request)
    tools = [t["name"] for t in request.get("tools", [])]
    if "record_observations" in tools:
        cited = re.findall(r"\[(entry_[0-9a-f]+)\] user: (.*)", prompt)
        observations = [
            {"content": f"User said: {text}", "sourceEntryIds": [entry_id]}
            for entry_id, text in cited
        ]
        return [
            provider_tool_call("o1", "record_observations", {"observations": observations}),
            provider_done(),
        ]
    if "record_reflections" in tools:
        ids = re.findall(r"\[([0-9a-f]{12})\]", prompt)
        reflection = {
            "content": "The user is planning a Lisbon trip on a budget.",
            "observationIds": ids,
        }
        return [
            provider_tool_call("r1", "record_reflections", {"reflections": [reflection]}),
            provider_done(),
        ]
    return [provider_text_delta("Nothing to do."), provider_done()]


async def main() -> None:
    # The main agent: recall is one of its tools; the model asks for it on turn 4.
    def get_entries(session_id: str) -> Any:
        return session.branch_entries()

    def main_model(request: ProviderRequest) -> list[Any]:
        text = prompt_text(request)
        if text.startswith("recall ") and request["messages"][-1]["role"] == "user":
            return [provider_tool_call("c1", "recall", {"id": text.split()[1]}), provider_done()]
        return [provider_text_delta("Noted."), provider_done()]

    # The tool is built before the agent, so it gets an equal redactor built once.
    redactor = create_redactor([API_KEY])
    agent = create_agent(
        model={"provider": "mock", "model": "main"},
        provider=create_mock_provider(main_model),
        tools=[create_recall_memory_tool(get_entries, redactor=redactor)],
        secrets=[API_KEY],
    )
    session = agent.create_session(id="trip")
    await session.run("I want to visit Lisbon in May.")
    await session.run("Our budget is 2000 euros.")
    await session.run("We dislike early flights.")
    await session.run(f"Book with the agency key {API_KEY}.")

    memory = create_observational_memory_runtime(
        session=session,
        worker_provider=create_mock_provider(worker_model),
        worker_model={"provider": "mock", "model": "memory-worker"},
        settings={"observational-memory": {"agentMaxTurns": 4}},
        redactor=agent.config.redactor,  # the agent's one redactor
    )
    report = await memory.flush()
    print("flush:", [(w.worker, w.recorded) for w in report.workers])
    for entry in await session.branch_entries():
        if entry["kind"] == "custom":
            print("record:", entry["data"]["type"], "covers", entry["data"]["coversUpToId"])

    stored = json.dumps(await session.entries())
    print("key in the store:", API_KEY in stored, "| redacted:", "[REDACTED]" in stored)

    # Fast compaction: the summary is the memory, no provider call.
    strategy = create_observational_memory_compaction_strategy(keep_recent_entries=2)
    compaction = await session.compact(strategy=strategy)
    print("summary:")
    print(compaction["summary"])
    print(
        "data.memory:",
        json.dumps({k: compaction["data"]["memory"][k] for k in ("type", "version", "fullFold")}),
    )

    # The model recalls the evidence behind a memory by its exact id.
    reflection_id = re.search(r"\[([0-9a-f]{12})\]", compaction["summary"])
    assert reflection_id is not None
    result = await session.run(f"recall {reflection_id.group(1)}")
    tool_result = next(m for m in result.messages if m["role"] == "tool")
    details = tool_result["content"][0]["result"]["details"]  # type: ignore[typeddict-item]
    print("recall:", details["kind"], "sources", len(details["sourceEntries"]))

    # om:status / om:view, as a host (or the CLI's rpc `command`) runs them.
    commands: ContributionRegistry[Any] = ContributionRegistry("command")
    for command in create_observational_memory_commands(
        get_entries, runtime=memory, redactor=agent.config.redactor
    ):
        commands.register(command.name, command)
    status = await execute_command(
        commands, "om:status", {}, {"sessionId": session.id}, redactor=agent.config.redactor
    )
    print("om:status:", status["text"])
    view = await execute_command(
        commands,
        "om:view",
        {"mode": "everything"},
        {"sessionId": "trip"},
        redactor=agent.config.redactor,
    )
    print("om:view everything:", view["text"])


if __name__ == "__main__":
    anyio.run(main)
