"""Drive one fixture through a real ``AgentSession`` with the mock provider,
once per variant, and score every provider request as it is sent.

Scoring (the same for every variant, peers and anchors included): a request
is its tool declarations (one row) plus its messages, each row estimated
with the native token estimator. A prompt cache keeps the previous request;
the longest common prefix of rows is read at 0.1x, the rest written at
1.25x, in base-input-token units. A cache bust is a request whose previous
request is not a prefix of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism import _native
from prism._bench.attention.fixtures import TOOLS, Fixture, Turn
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores import create_memory_session_store
from prism.tools import define_tool

__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "MODEL",
    "WINDOW",
    "Scorer",
    "VariantResult",
    "explain_bust",
    "row_tokens",
    "run_variant",
    "score",
]

MODEL: dict[str, Any] = {
    "provider": "mock",
    "model": "bench-200k",
    "limits": {"contextWindow": 200_000, "maxOutputTokens": 8_192},
}
WINDOW = MODEL["limits"]["contextWindow"]
CACHE_READ = 0.1
CACHE_WRITE = 1.25
COMPACTION = {"trigger": {"type": "input_ratio", "ratio": 0.9}}


@dataclass
class VariantResult:
    """What one variant sent, request by request, and what its session reported."""

    name: str
    kind: str = "prism"  # prism | baseline | peer | anchor
    input_tokens: list[int] = field(default_factory=list)
    busts: list[bool] = field(default_factory=list)
    cache_read: list[int] = field(default_factory=list)
    cache_write: list[int] = field(default_factory=list)
    bust_details: list[dict[str, Any]] = field(default_factory=list)
    compactions: int = 0
    compiled_events: int = 0
    truncated_events: int = 0
    first_trip: dict[str, Any] | None = None
    # Requests at which the gate's frontier grew (a trip), by index.
    trip_requests: list[int] = field(default_factory=list)
    # Requests sent by the end of each run (a turn: one user message and the
    # requests it caused), so per-turn figures can be summed.
    run_ends: list[int] = field(default_factory=list)
    error: str | None = None
    note: str | None = None

    @property
    def total(self) -> int:
        """Input tokens over every request."""
        return sum(self.input_tokens)

    @property
    def cost(self) -> float:
        """Cache-aware input cost in base-input-token units."""
        return sum(
            r * CACHE_READ + w * CACHE_WRITE
            for r, w in zip(self.cache_read, self.cache_write, strict=True)
        )

    @property
    def over_window(self) -> int:
        """Requests larger than the model's context window."""
        return sum(1 for t in self.input_tokens if t > WINDOW)

    def request_costs(self) -> list[float]:
        """Each request's cache-aware cost, in base-input-token units."""
        return [
            r * CACHE_READ + w * CACHE_WRITE
            for r, w in zip(self.cache_read, self.cache_write, strict=True)
        ]

    def turn_costs(self) -> list[float]:
        """Each finished run's cost: the sum over the requests it caused."""
        costs = self.request_costs()
        out: list[float] = []
        start = 0
        for end in self.run_ends:
            out.append(sum(costs[start:end]))
            start = end
        return out

    def to_json(self) -> dict[str, Any]:
        """The full benchmark's camelCase record of this variant."""
        return {
            "name": self.name,
            "kind": self.kind,
            "requests": len(self.input_tokens),
            "totalInputTokens": self.total,
            "peakInputTokens": max(self.input_tokens, default=0),
            "cacheBusts": sum(self.busts),
            "bustTurns": [i for i, b in enumerate(self.busts) if b],
            "cacheReadTokens": sum(self.cache_read),
            "cacheWriteTokens": sum(self.cache_write),
            "cacheAwareCost": round(self.cost),
            "requestsOverWindow": self.over_window,
            "compactions": self.compactions,
            "attentionCompiledEvents": self.compiled_events,
            "truncatedTurns": self.truncated_events,
            "firstTrip": self.first_trip,
            "tripRequests": self.trip_requests,
            "bustCauses": {
                cause: sum(1 for d in self.bust_details if d["cause"] == cause)
                for cause in sorted({d["cause"] for d in self.bust_details})
            },
            "bustDetails": self.bust_details,
            "perRequestInputTokens": self.input_tokens,
            "error": self.error,
            "note": self.note,
        }


def row_tokens(index: int, row: Any) -> int:
    """Row 0 is the tool declarations; the others are messages."""
    if index == 0:
        return int(_native.estimate_value_tokens(row))
    return int(_native.estimate_message_tokens(row))


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading rows ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _is_stub(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("Tool result ") and " omitted " in value


def _has_thinking(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "thinking" for b in content
    )


def _stubbed(message: Any) -> int:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return 0
    return sum(
        1
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result" and _is_stub(b.get("result"))
    )


def explain_bust(
    index: int, previous: list[Any], current: list[Any], shared: int, rewritten: int
) -> dict[str, Any]:
    """Why request ``index`` does not extend the previous one: the rows of
    the previous request that changed, split into newly stubbed tool results
    and newly stripped thinking turns (anything else is ``other``)."""
    stubs = strips = other = 0
    for old, new in zip(previous[shared:], current[shared:], strict=False):
        if old == new:
            continue
        new_stubs = _stubbed(new) - _stubbed(old)
        stripped = _has_thinking(old) and not _has_thinking(new)
        stubs += max(new_stubs, 0)
        strips += int(stripped)
        if new_stubs <= 0 and not stripped:
            other += 1
    causes = [name for name, n in (("stubs", stubs), ("thinking", strips), ("other", other)) if n]
    first = current[shared] if shared < len(current) else None
    return {
        "request": index,
        "run": index // 2,
        "firstChangedRow": shared,
        "firstChangedRole": first.get("role") if isinstance(first, dict) else "tools",
        "newStubs": stubs,
        "newThinkingStrips": strips,
        "otherChangedRows": other,
        "cause": "+".join(causes) or "other",
        "rewrittenTokens": rewritten,
    }


class Scorer:
    """Scores requests one at a time, keeping only the previous one (a
    150-run session would not fit in memory as a list of requests). Rows
    shared with the previous request reuse its estimates."""

    def __init__(self, result: VariantResult) -> None:
        """Scores into ``result``."""
        self.result = result
        self._rows: list[Any] | None = None
        self._tokens: list[int] = []

    def seed(self, request: dict[str, Any]) -> None:
        """Start from ``request`` as the cached prefix, without counting it
        (a resumed session: the earlier process's last request)."""
        self._rows = [request.get("tools", []), *request["messages"]]
        self._tokens = [row_tokens(i, r) for i, r in enumerate(self._rows)]

    def feed(self, request: dict[str, Any]) -> None:
        """Score ``request`` against the previous one, then keep it as the cache."""
        rows = [request.get("tools", []), *request["messages"]]
        result = self.result
        if self._rows is None:
            shared = 0
        else:
            shared = common_prefix(self._rows, rows)
        tokens = self._tokens[:shared] + [
            row_tokens(i, r) for i, r in enumerate(rows) if i >= shared
        ]
        total = sum(tokens)
        read = sum(tokens[:shared]) if self._rows is not None else 0
        bust = self._rows is not None and shared < len(self._rows)
        if bust:
            assert self._rows is not None
            detail = explain_bust(len(result.busts), self._rows, rows, shared, total - read)
            result.bust_details.append(detail)
        result.input_tokens.append(total)
        result.busts.append(bust)
        result.cache_read.append(read)
        result.cache_write.append(total - read)
        self._rows = rows
        self._tokens = tokens


def score(result: VariantResult, requests: list[dict[str, Any]]) -> None:
    """Score ``requests`` in order into ``result``."""
    scorer = Scorer(result)
    for request in requests:
        scorer.feed(request)


def resumed_prefix(request: dict[str, Any], fixture: Fixture) -> dict[str, Any]:
    """The last request of the earlier process: the same tool declarations
    and system message, then the preloaded history up to its last tool
    result (the final answer was that request's response)."""
    system = [m for m in request["messages"][:1] if m.get("role") == "system"]
    return {"tools": request.get("tools", []), "messages": [*system, *fixture.preload[:-1]]}


def _preload_entries(session_id: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for i, message in enumerate(messages):
        entry_id = f"pre{i:05d}"
        entries.append(
            {
                "id": entry_id,
                "sessionId": session_id,
                "parentId": parent,
                "kind": "message",
                "createdAt": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
        )
        parent = entry_id
    return entries


def _reply(turn: Turn, request: dict[str, Any]) -> list[Any]:
    """The scripted model's events for ``request`` during ``turn``: after a
    tool result the answer; otherwise thinking, then a tool call or the answer."""
    if request["messages"][-1]["role"] == "tool":
        return [provider_text_delta(turn.answer), provider_done()]
    events: list[Any] = [provider_thinking_delta(turn.thinking)]
    if turn.call is None:
        return [*events, provider_text_delta(turn.answer), provider_done()]
    if turn.text:
        events.append(provider_text_delta(turn.text))
    call = turn.call
    return [
        *events,
        provider_tool_call(call["id"], call["name"], call["arguments"]),
        provider_done(),
    ]


class _ScriptedModel:
    """The mock provider's script: shows each request to the watchers as it
    is sent, notes the gate's trips, and answers as the fixture says."""

    def __init__(self, fixture: Fixture, result: VariantResult, watchers: list[Any]) -> None:
        self.fixture = fixture
        self.result = result
        self.watchers = watchers
        self.turn = 0
        self.session: Any = None
        self._frontier = 0
        self._seeded = False

    def __call__(self, request: dict[str, Any]) -> list[Any]:
        frontier = self.session.attention_sticky
        if frontier is not None and len(frontier) > self._frontier:
            self._frontier = len(frontier)
            self.result.trip_requests.append(len(self.result.input_tokens))
        if self.fixture.preload and not self._seeded:
            self._seeded = True
            earlier = resumed_prefix(request, self.fixture)
            for watcher in self.watchers:
                watcher.seed(earlier)
        for watcher in self.watchers:
            watcher.feed(request)
        return _reply(self.fixture.turns[self.turn], request)


_FIRST_TRIP_FIELDS = (
    "used",
    "usedAfter",
    "droppedThinkingTurns",
    "stubbedToolResults",
    "stubbedBytes",
    "truncated",
)


def _counter(result: VariantResult) -> Callable[[Mapping[str, object]], None]:
    """A session subscriber that counts compactions and the gate's events."""

    def on_event(event: Mapping[str, object]) -> None:
        if event["type"] == "compaction_finished":
            result.compactions += 1
        elif event["type"] == "attention_compiled":
            result.compiled_events += 1
            result.truncated_events += bool(event["truncated"])
            if result.first_trip is None:
                result.first_trip = {k: event[k] for k in _FIRST_TRIP_FIELDS}

    return on_event


def _tools(fixture: Fixture) -> list[Any]:
    """The fixture's tools; each returns the result the fixture scripted."""
    by_call = {t.call["id"]: t for t in fixture.turns if t.call is not None}

    def make_tool(tool_name: str) -> Any:
        def execute(args: dict[str, Any], ctx: Any) -> Any:
            return by_call[ctx.tool_call_id].result

        return define_tool(tool_name, execute, description=f"{tool_name} (bench)")

    return [make_tool(t) for t in TOOLS]


async def run_variant(
    fixture: Fixture,
    result: VariantResult,
    attention: Any,
    *,
    compaction: bool,
    observers: Sequence[Any] = (),
    on_run: Callable[[], None] = lambda: None,
    model: dict[str, Any] | None = None,
) -> VariantResult:
    """One session through every turn of ``fixture``. ``observers`` (objects
    with ``seed(request)`` and ``feed(request)``, like :class:`Scorer`) see
    each request (a private copy) as it is sent; with a preloaded store they
    are first seeded with the earlier process's last request."""
    script = _ScriptedModel(fixture, result, [Scorer(result), *observers])
    provider = create_mock_provider(script)
    store = create_memory_session_store()
    session_id = f"bench-{fixture.name}-{result.name}"
    if fixture.preload:
        await store.append_many(_preload_entries(session_id, fixture.preload))  # type: ignore[arg-type]
    agent = create_agent(
        model=model or MODEL,
        provider=provider,
        tools=_tools(fixture),
        system="You are a careful coding agent.",
        attention_compiler=attention,
        compaction=COMPACTION if compaction else None,
        store=store,
    )
    session = script.session = agent.create_session(id=session_id)
    session.subscribe(_counter(result))
    for index, turn in enumerate(fixture.turns):
        script.turn = index
        try:
            await session.run(turn.user)
        except Exception as error:  # a budget error ends the session honestly
            result.error = f"{type(error).__name__}: {error}"
            break
        provider.requests.clear()  # scored as sent; keeping them costs gigabytes
        result.run_ends.append(len(result.input_tokens))
        on_run()
    return result
