"""Replay a recorded run offline: the stored provider turns are played back
by a mock provider, the stored tool results are returned by stand-in tools
of the same names, and the run goes through a real ``AgentSession`` on an
in-memory store seeded with the history before it. No model is called, no
tool of the host runs, nothing is written to the inspected store; the
events are the ones the runtime emits for those turns.

A run is found by its durable checkpoints (``runId``, ``startEntryId``) or,
for a session written without ``durable``, as the span from a user message
to the next one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from prism.middleware import create_middleware_registry
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores import create_memory_session_store
from prism.tools import ToolContext, define_tool

# Entries as read back from a store, possibly written by another tool.
Entry = Mapping[str, Any]

__all__ = ["RecordedRun", "find_runs", "replay_run"]

_REPLAY_MODEL = {"provider": "replay", "model": "recorded"}


class RecordedRun:
    def __init__(self, run_id: str, start: int, end: int, durable: bool) -> None:
        self.run_id, self.start, self.end, self.durable = run_id, start, end, durable

    def to_json(self, branch: Sequence[Entry]) -> dict[str, Any]:
        entries = branch[self.start : self.end]
        turns = sum(
            1 for e in entries if e["kind"] == "message" and e["message"].get("role") == "assistant"
        )
        return {
            "runId": self.run_id,
            "startEntryId": branch[self.start]["id"],
            "turns": turns,
            "durable": self.durable,
            "at": branch[self.start].get("createdAt"),
        }


def _is_user(entry: Entry) -> bool:
    return bool(entry["kind"] == "message" and entry["message"].get("role") == "user")


def find_runs(branch: Sequence[Entry]) -> list[RecordedRun]:
    """The runs on ``branch`` with at least one provider turn, oldest first."""
    index = {e["id"]: i for i, e in enumerate(branch)}
    runs: list[RecordedRun] = []
    durable_starts: dict[str, int] = {}
    for entry in branch:
        if entry["kind"] == "custom" and entry.get("customType") == "prism.checkpoint":
            data = entry.get("data")
            if isinstance(data, Mapping) and isinstance(data.get("runId"), str):
                start = index.get(str(data.get("startEntryId")), None)
                if start is not None:
                    durable_starts.setdefault(data["runId"], start)
    starts = sorted((s, run_id, True) for run_id, s in durable_starts.items())
    covered = {s for s, _, _ in starts}
    plain = [
        (p, f"run@{branch[p]['id']}", False)
        for p, e in enumerate(branch)
        if _is_user(e) and p not in covered and not _inside_durable(p, starts, branch)
    ]
    ordered = sorted([*starts, *plain])
    for number, (start, run_id, durable) in enumerate(ordered):
        end = ordered[number + 1][0] if number + 1 < len(ordered) else len(branch)
        run = RecordedRun(run_id, start, end, durable)
        if run.to_json(branch)["turns"]:
            runs.append(run)
    return runs


def _inside_durable(
    position: int, starts: list[tuple[int, str, bool]], branch: Sequence[Entry]
) -> bool:
    """A user message a durable run steered in (between its start and its end)."""
    for start, run_id, _ in starts:
        if start < position:
            for entry in branch[start:position]:
                data = entry.get("data") if entry["kind"] == "custom" else None
                if (
                    isinstance(data, Mapping)
                    and data.get("runId") == run_id
                    and data.get("phase") == "end"
                ):
                    break
            else:
                return True
    return False


def _provider_turn(message: Mapping[str, Any]) -> list[Any]:
    events: list[Any] = []
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "thinking":
            events.append(provider_thinking_delta(str(block.get("text", ""))))
        elif kind == "text":
            events.append(provider_text_delta(str(block.get("text", ""))))
        elif kind == "tool_call":
            events.append(
                provider_tool_call(
                    str(block["id"]), str(block["name"]), dict(block.get("arguments") or {})
                )
            )
    events.append(provider_done())
    return events


class _StoredResults:
    """Answers each tool call with its stored result; never runs anything.

    The stand-in tool returns the stored value and a ``tool_result``
    middleware puts the stored result back whole (an error result stays the
    error it was, not an exception wrapped again)."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.results: dict[str, Any] = {}
        self.images: dict[str, list[Any]] = {}
        for entry in entries:
            if entry["kind"] == "message" and entry["message"].get("role") == "tool":
                call_id: str | None = None
                for block in entry["message"].get("content") or ():
                    if block.get("type") == "tool_result":
                        call_id = str(block.get("toolCallId"))
                        self.results[call_id] = block
                    elif block.get("type") == "image" and call_id is not None:
                        # A tool's images follow its result (docs/tools.md).
                        self.images.setdefault(call_id, []).append(block)

    def tool(self, name: str) -> Any:
        def answer(args: Mapping[str, Any], ctx: ToolContext) -> Any:
            stored = self.results.get(str(ctx.tool_call_id))
            if stored is None:
                raise RuntimeError(f"replay: no stored result for call {ctx.tool_call_id}")
            return stored.get("result")

        return define_tool(name, answer)

    async def restore(self, result: Any, proceed: Any) -> Any:
        result = await proceed(result)
        stored = self.results.get(str(result.get("toolCallId")))
        if stored is None:
            return result
        restored = {
            "toolCallId": result["toolCallId"],
            "name": result["name"],
            "value": stored.get("result"),
        }
        if stored.get("isError"):
            restored["isError"] = True
        images = self.images.get(str(result["toolCallId"]))
        if images:
            restored["images"] = images
        return restored


async def replay_run(branch: Sequence[Entry], run: RecordedRun) -> AsyncIterator[dict[str, Any]]:
    """Yield the events of ``run`` played again from its stored turns."""
    entries = branch[run.start : run.end]
    turns = [
        _provider_turn(e["message"])
        for e in entries
        if e["kind"] == "message" and e["message"].get("role") == "assistant"
    ]
    first = branch[run.start]
    if not _is_user(first):
        first = next((e for e in entries if _is_user(e)), first)
    names = sorted(
        {
            str(b["name"])
            for e in entries
            if e["kind"] == "message"
            for b in e["message"].get("content") or ()
            if b.get("type") == "tool_call"
        }
    )
    stored = _StoredResults(entries)
    store = create_memory_session_store()
    session_id = "replay"
    history = [dict(e, sessionId=session_id) for e in branch[: run.start]]
    if history:
        await store.append_many(history)  # type: ignore[arg-type]
    middleware = create_middleware_registry()
    middleware.use("tool_result", stored.restore)
    agent = create_agent(
        model=_REPLAY_MODEL,
        provider=create_mock_provider(turns),
        tools=[stored.tool(name) for name in names],
        middleware=middleware,
        store=store,
        max_tool_rounds=max(8, len(turns) + 1),
    )
    session = agent.create_session(session_id)
    run_input: Any = first["message"] if _is_user(first) else "(replay)"
    async for event in session.stream(run_input):
        yield dict(event)
