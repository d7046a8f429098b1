"""The three workers: observer, reflector, dropper.

Each worker is a bounded agent loop: a throwaway Prism agent on the host's
worker provider and model, in an in-memory session, with one tool that
records (or drops) memories into a pending list. The runtime appends that
list as one memory record only after the loop finished cleanly, so a worker
that errors or runs out of turns leaves nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.compaction.observational_memory.ids import create_memory_id
from prism.compaction.observational_memory.records import Observation, Reflection
from prism.contracts import ModelConfig
from prism.errors import ConfigError
from prism.runtime import create_agent
from prism.security.redaction import SecretRedactor
from prism.stores.memory import MemorySessionStore
from prism.tools.definition import ToolContext, ToolDefinition, define_tool

# Longest piece of one entry a worker prompt shows (tool results can be huge).
MAX_ENTRY_CHARS = 4000
# Recent memories shown to the observer so it does not record them again.
MAX_KNOWN_MEMORIES = 50

OBSERVER_PROMPT = """\
You are the observer of a long-running agent session. You turn the session's \
raw entries into observations: short, specific, durable facts that will still \
matter later (goals, decisions, constraints, names, numbers, results of tool \
calls, open questions). Skip greetings and chatter, and do not repeat the \
already-recorded observations you are shown.

Record observations with the record_observations tool. Every observation must \
cite, in sourceEntryIds, the ids of the entries it comes from: the ids shown \
in square brackets. Ids that are not shown are refused. When you have \
recorded everything worth keeping, answer with one short sentence and no \
tool call."""

REFLECTOR_PROMPT = """\
You are the reflector of a long-running agent session's memory. You read \
observations and consolidate related ones into reflections: stable, \
higher-level conclusions (what the user wants, how the work is going, what \
has been settled). Every reflection must list, in observationIds, the ids \
of the observations it consolidates (the ids in square brackets).

Record reflections with the record_reflections tool. When you are done, \
answer with one short sentence and no tool call."""

DROPPER_PROMPT = """\
You prune a long-running agent session's observation pool, which has grown \
past its target size. Drop observations that are superseded by a later \
observation, duplicated, or no longer useful, using the drop_observations \
tool with their ids (in square brackets). Keep anything that may still \
matter; dropping is optional. When you are done, answer with one short \
sentence and no tool call."""


@dataclass(slots=True)
class WorkerJob:
    """One worker's input: its name, prompt, tool, and where it records."""

    name: str
    system: str
    prompt: str
    tool: ToolDefinition
    pending: list[Any] = field(default_factory=list)


def _clip(text: str) -> str:
    if len(text) <= MAX_ENTRY_CHARS:
        return text
    return text[:MAX_ENTRY_CHARS] + f" [... {len(text) - MAX_ENTRY_CHARS} more chars]"


def describe_entry(entry: Mapping[str, Any]) -> str | None:
    """One prompt line for a branch entry, or None for entries a worker
    should not read: custom records, labels, model changes, and compaction
    summaries (they restate entries that are still on the branch, and a
    memory compaction's summary is the memory itself)."""
    kind = entry.get("kind")
    if kind == "summary":
        return f"[{entry['id']}] summary: {_clip(str(entry.get('summary', '')))}"
    if kind != "message":
        return None
    message = entry.get("message") or {}
    role = message.get("role", "?")
    if role == "system":
        return None
    parts: list[str] = []
    for block in message.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_call":
            arguments = json.dumps(block.get("arguments", {}), ensure_ascii=False)
            parts.append(f"(calls tool {block.get('name')} with {arguments})")
        elif kind == "tool_result":
            value = json.dumps(block.get("result"), ensure_ascii=False, default=str)
            failed = " (error)" if block.get("isError") else ""
            parts.append(f"(tool {block.get('name')} returned{failed}: {value})")
        elif kind == "image":
            parts.append("[image]")
    text = " ".join(p for p in parts if p)
    return f"[{entry['id']}] {role}: {_clip(text)}" if text else None


def _memory_lines(items: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"[{item['id']}] {item['content']}" for item in items) or "(none)"


def _refuse_unknown(ids: Sequence[str], known: set[str] | dict[str, Any], what: str) -> None:
    unknown = [i for i in ids if i not in known]
    if unknown:
        shown = ", ".join(repr(i[:64]) for i in unknown[:10])
        raise ConfigError(
            f"refused: {shown} {'is' if len(unknown) == 1 else 'are'} not {what}; "
            "cite only ids shown in square brackets. Nothing from this call was recorded."
        )


def _record_list_schema(list_key: str, ids_key: str) -> dict[str, Any]:
    """``{list_key: [{content, ids_key: [id, ...]}, ...]}``: the shape of the
    observer's and the reflector's record tools (each record cites its ids)."""
    return {
        "type": "object",
        "properties": {
            list_key: {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1},
                        ids_key: {"type": "array", "minItems": 1, "items": {"type": "string"}},
                    },
                    "required": ["content", ids_key],
                    "additionalProperties": False,
                },
            }
        },
        "required": [list_key],
        "additionalProperties": False,
    }


_OBSERVATIONS_SCHEMA = _record_list_schema("observations", "sourceEntryIds")
_REFLECTIONS_SCHEMA = _record_list_schema("reflections", "observationIds")

_DROP_SCHEMA = {
    "type": "object",
    "properties": {
        "observationIds": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "reason": {"type": "string"},
    },
    "required": ["observationIds"],
    "additionalProperties": False,
}


def observer_job(
    unobserved: Sequence[Mapping[str, Any]],
    branch_ids: set[str],
    known: Sequence[Observation],
    redactor: SecretRedactor,
) -> WorkerJob:
    lines = [line for line in (describe_entry(e) for e in unobserved) if line is not None]
    prompt = (
        "Already recorded observations:\n"
        + _memory_lines(list(known)[-MAX_KNOWN_MEMORIES:])
        + "\n\nNew session entries:\n"
        + "\n".join(lines)
    )
    return _recording_job(
        WorkerJob("observer", OBSERVER_PROMPT, redactor.redact_text(prompt), _PLACEHOLDER),
        redactor,
        tool=("record_observations", "observations", _OBSERVATIONS_SCHEMA),
        description="Record observations; each cites the entry ids it comes from.",
        refs=("sourceEntryIds", branch_ids, "entries on this branch"),
    )


def reflector_job(
    unreflected: Sequence[Observation],
    active: dict[str, Observation],
    reflections: Sequence[Reflection],
    redactor: SecretRedactor,
) -> WorkerJob:
    prompt = (
        "Existing reflections:\n"
        + _memory_lines(reflections)
        + "\n\nObservations to consolidate:\n"
        + _memory_lines(unreflected)
    )
    return _recording_job(
        WorkerJob("reflector", REFLECTOR_PROMPT, redactor.redact_text(prompt), _PLACEHOLDER),
        redactor,
        tool=("record_reflections", "reflections", _REFLECTIONS_SCHEMA),
        description="Record reflections; each lists the observation ids it consolidates.",
        refs=("observationIds", active, "active observations"),
    )


def _recording_job(
    job: WorkerJob,
    redactor: SecretRedactor,
    *,
    tool: tuple[str, str, dict[str, Any]],
    description: str,
    refs: tuple[str, set[str] | dict[str, Any], str],
) -> WorkerJob:
    """``job`` with the tool its worker records memories through: ``tool``
    is (tool name, the argument listing the items, its schema); each item's
    ``refs`` key (the first of ``refs``) must name only what the second
    holds (the third says what, in the refusal)."""
    tool_name, items_key, schema = tool
    refs_key, allowed, allowed_label = refs

    def record(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        items = args[items_key]
        for item in items:
            _refuse_unknown(item[refs_key], allowed, allowed_label)
        made: list[Any] = [
            {
                "id": create_memory_id(),
                "content": redactor.redact_text(item["content"].strip()),
                refs_key: list(dict.fromkeys(item[refs_key])),
            }
            for item in items
        ]
        job.pending.extend(made)
        return {"recorded": [m["id"] for m in made]}

    job.tool = define_tool(tool_name, record, description=description, parameters=schema)
    return job


def dropper_job(
    active: dict[str, Observation],
    reflections: Sequence[Reflection],
    pool_tokens: int,
    target_tokens: int,
    redactor: SecretRedactor,
) -> WorkerJob:
    prompt = (
        f"The observation pool holds about {pool_tokens} tokens; the target is "
        f"{target_tokens}.\n\nReflections:\n"
        + _memory_lines(reflections)
        + "\n\nActive observations (oldest first):\n"
        + _memory_lines(list(active.values()))
    )
    job = WorkerJob("dropper", DROPPER_PROMPT, redactor.redact_text(prompt), _PLACEHOLDER)

    def drop(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        ids = list(dict.fromkeys(args["observationIds"]))
        _refuse_unknown(ids, active, "active observations")
        fresh = [i for i in ids if i not in job.pending]
        job.pending.extend(fresh)
        return {"dropped": fresh}

    job.tool = define_tool(
        "drop_observations",
        drop,
        description="Drop observations from the pool by id.",
        parameters=_DROP_SCHEMA,
    )
    return job


class RedactingProvider:
    """Hands the worker provider a redacted copy of every request: the
    prompt is redacted already, but a model may echo a secret into its tool
    arguments, and those come back in the next turn's request."""

    __slots__ = ("_provider", "_redactor", "name")

    def __init__(self, provider: Any, redactor: SecretRedactor) -> None:
        self._provider = provider
        self._redactor = redactor
        self.name = getattr(provider, "name", "worker")

    def generate(self, request: Any) -> Any:
        return self._provider.generate(self._redactor.redact_value(request))


async def run_worker(
    job: WorkerJob, provider: Any, model: ModelConfig, max_turns: int, redactor: SecretRedactor
) -> int:
    """Run ``job`` as an agent loop of at most ``max_turns`` provider turns.
    Returns the turns used; raises the run's error (``MaxToolRoundsError``
    when the worker wanted more turns, ``ProviderError``, ...)."""
    if len(redactor):
        provider = RedactingProvider(provider, redactor)
    agent = create_agent(
        model=model,
        provider=provider,
        tools=[job.tool],
        system=job.system,
        # N turns = N-1 tool rounds and a final answer.
        max_tool_rounds=max_turns - 1,
        store=MemorySessionStore(),
    )
    session = agent.create_session(id=f"om-{job.name}")
    result = await session.run(job.prompt)
    return result.tool_rounds + 1


def _placeholder(args: dict[str, Any], ctx: ToolContext) -> None:
    raise ConfigError("worker tool not bound")


_PLACEHOLDER = define_tool("pending", _placeholder)
