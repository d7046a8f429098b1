"""The supervisor in one process: linked child sessions, lifecycle events,
bounded answers, the after hook, budgets, limits, abort propagation and
every refusal, on a real in-memory store with mock providers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NotRequired, get_args, get_origin, get_type_hints

import anyio
import pytest
from subagent_scenario import MODEL, child_script, parent_script

from prism.contracts import AgentEvent
from prism.errors import ConfigError
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
    provider_usage,
)
from prism.runtime import Agent, create_agent
from prism.stores import MemorySessionStore
from prism.subagents import (
    Budget,
    ChildContext,
    ChildSpec,
    DelegationOutcome,
    Supervisor,
    create_supervisor,
    delegation_id_for,
)
from prism.tools import ToolContext, define_tool

pytestmark = pytest.mark.anyio

SECRET = "sk-live-subagent-0123456789"


class Harness:
    """A parent agent whose first turn delegates ``calls`` in one round."""

    def __init__(self, **supervisor_options: Any) -> None:
        self.store = MemorySessionStore()
        self.outcomes: list[DelegationOutcome] = []
        self.contexts: list[ChildContext] = []
        self.events: list[dict[str, Any]] = []
        self.child_events: list[dict[str, Any]] = []
        self.gate = anyio.Event()
        children = supervisor_options.pop("children", None) or {
            "explorer": ChildSpec(self.child(child_script(None, "explored ")), "reads code"),
            "reviewer": ChildSpec(self.child(child_script(None, "reviewed ")), "reviews"),
            "waiter": ChildSpec(self.child(child_script("wait", "waited "), [self.wait_tool()])),
        }
        self.supervisor: Supervisor = create_supervisor(
            children=children, hooks={"after": self.outcomes.append}, **supervisor_options
        )
        self.supervisor.subscribe(self.child_events.append)

    def child(self, script: Any, tools: list[Any] | None = None) -> Callable[[ChildContext], Agent]:
        def create(ctx: ChildContext) -> Agent:
            self.contexts.append(ctx)
            return create_agent(
                model=MODEL, provider=create_mock_provider(script), tools=tools or []
            )

        return create

    def wait_tool(self) -> Any:
        async def wait(_args: dict[str, Any], _ctx: Any) -> str:
            await self.gate.wait()
            return "released"

        return define_tool("wait", wait)

    def parent(self, calls: list[tuple[str, str]], **options: Any) -> Agent:
        return create_agent(
            model=MODEL,
            provider=create_mock_provider(parent_script(calls)),
            tools=[self.supervisor.tool],
            store=self.store,
            tool_concurrency=4,
            **options,
        )

    async def run(self, calls: list[tuple[str, str]], **options: Any) -> dict[str, Any]:
        session = self.parent(calls, **options).create_session("parent")
        session.subscribe(self.record)
        result = await session.run("go")
        report: dict[str, Any] = json.loads(result.text)
        return report

    def record(self, event: Any) -> None:
        if event["type"].startswith("subagent_"):
            self.events.append(event)
            if event["type"] == "subagent_stopped" and event["outcome"] == "rejected":
                self.gate.set()


async def test_a_child_runs_linked_on_the_parents_store_and_answers() -> None:
    h = Harness()
    report = await h.run([("c1", "explorer")])
    value = report["c1"]["result"]
    assert report["c1"]["error"] is False
    assert value["outcome"] == "success" and value["child"] == "explorer"
    assert value["answer"] == "explored {}"
    delegation = value["delegationId"]
    assert value["sessionId"] == delegation
    # The child is a session of its own on the same store, linked.
    entries = await h.store.list(delegation)
    (link,) = [e for e in entries if e.get("customType") == "prism.subagent"]
    assert link["data"]["parentSessionId"] == "parent"
    assert link["data"]["toolCallId"] == "c1"
    assert link["data"]["parentRunId"].startswith("run_")
    assert [
        e["data"]["outcome"] for e in entries if e.get("customType") == "prism.subagent.outcome"
    ] == ["success"]
    (ctx,) = h.contexts
    assert (ctx.delegation_id, ctx.session_id, ctx.resumed) == (delegation, delegation, False)
    assert ctx.store is h.store
    # Lifecycle events on the parent's session, once each.
    started, stopped = h.events
    assert started["type"] == "subagent_started" and started["sessionId"] == "parent"
    assert started["childSessionId"] == delegation and started["toolCallId"] == "c1"
    assert started["task"] == "do explorer" and started["resumed"] is False
    assert stopped["outcome"] == "success" and "runId" in stopped
    # The after hook saw the terminal outcome exactly once, with the full text.
    (outcome,) = h.outcomes
    assert (outcome.outcome, outcome.text, outcome.session_id) == (
        "success",
        "explored {}",
        delegation,
    )
    # Subscribers of the supervisor see the child's own events.
    assert {e["sessionId"] for e in h.child_events} == {delegation}
    assert h.child_events[0]["type"] == "run_started"


async def test_a_long_answer_is_bounded_and_kept_whole_in_the_child_session() -> None:
    long = "x" * 5000
    h = Harness(
        children={
            "big": ChildSpec(
                lambda _ctx: create_agent(
                    model=MODEL,
                    provider=create_mock_provider([provider_text_delta(long), provider_done()]),
                )
            )
        },
        max_answer_chars=300,
    )
    value = (await h.run([("c1", "big")]))["c1"]["result"]
    assert len(value["answer"]) <= 300
    assert value["truncated"] is True and value["answerChars"] == 5000
    assert f"whole answer is in session {value['delegationId']}" in value["answer"]
    messages = [
        e["message"] for e in await h.store.list(value["delegationId"]) if e["kind"] == "message"
    ]
    assert messages[-1]["content"][0]["text"] == long


async def test_summarize_shortens_a_long_answer() -> None:
    seen: list[int] = []

    async def summarize(text: str, limit: int) -> str:
        seen.append(limit)
        return f"summary of {len(text)} characters"

    h = Harness(
        children={
            "big": ChildSpec(
                lambda _ctx: create_agent(
                    model=MODEL,
                    provider=create_mock_provider(
                        [provider_text_delta("y" * 900), provider_done()]
                    ),
                )
            )
        },
        max_answer_chars=200,
        summarize=summarize,
    )
    value = (await h.run([("c1", "big")]))["c1"]["result"]
    assert value["answer"] == "summary of 900 characters" and seen == [200]


async def test_an_unknown_child_is_a_tool_error_listing_the_names() -> None:
    h = Harness()
    report = await h.run([("c1", "nobody")])
    assert report["c1"]["error"] is True
    message = report["c1"]["result"]["message"]
    assert "UnknownChildError" in message
    assert "unknown sub-agent 'nobody'; this supervisor has: explorer, reviewer, waiter" in message
    (stopped,) = h.events
    assert stopped["outcome"] == "rejected" and "childSessionId" not in stopped
    (outcome,) = h.outcomes
    assert outcome.outcome == "rejected" and outcome.context is None
    # Nothing was stored for a child that never existed.
    assert await h.store.list(outcome.delegation_id) == []


async def test_a_delegation_past_the_concurrency_limit_is_rejected() -> None:
    h = Harness(max_concurrency=1)
    report = await h.run([("c1", "waiter"), ("c2", "waiter")])
    errors = {k: v for k, v in report.items() if v["error"]}
    (rejected,) = errors.values()
    assert "1 children are running and max_concurrency is 1" in rejected["result"]["message"]
    assert sum(not v["error"] for v in report.values()) == 1
    assert sorted(o.outcome for o in h.outcomes) == ["rejected", "success"]
    assert h.supervisor.running == 0


async def test_a_delegation_past_the_delegation_budget_is_rejected() -> None:
    h = Harness(budget=Budget(max_delegations=2))
    report = await h.run([("c1", "explorer"), ("c2", "reviewer"), ("c3", "explorer")])
    assert sum(v["error"] for v in report.values()) == 1
    (message,) = [v["result"]["message"] for v in report.values() if v["error"]]
    assert "already delegated 2 tasks and the budget allows max_delegations=2" in message
    assert len(h.contexts) == 2  # the refused one's factory never ran


async def test_a_child_over_its_token_budget_is_aborted() -> None:
    turn = [
        provider_tool_call("t1", "noop", {}),
        provider_usage(input_tokens=80, output_tokens=40),
        provider_done("tool_use"),
    ]
    spend = create_mock_provider([turn, [provider_text_delta("late"), provider_done()]])
    agent = create_agent(
        model=MODEL, provider=spend, tools=[define_tool("noop", lambda _a, _c: "ok")]
    )
    h = Harness(children={"spender": ChildSpec(lambda _ctx: agent, budget=Budget(max_tokens=100))})
    report = await h.run([("c1", "spender")])
    assert "token budget exceeded (120 > max_tokens=100)" in report["c1"]["result"]["message"]
    (outcome,) = h.outcomes
    assert outcome.outcome == "abort"


async def test_a_child_over_its_tool_rounds_fails() -> None:
    loop = create_mock_provider(
        lambda _r: [provider_tool_call("t", "noop", {}), provider_done("tool_use")]
    )
    agent = create_agent(
        model=MODEL, provider=loop, tools=[define_tool("noop", lambda _a, _c: "ok")]
    )
    h = Harness(
        children={"looper": ChildSpec(lambda _ctx: agent)}, budget=Budget(max_tool_rounds=2)
    )
    report = await h.run([("c1", "looper")])
    assert "MaxToolRoundsError" in report["c1"]["result"]["message"]
    assert [o.outcome for o in h.outcomes] == ["failure"]


async def test_a_child_over_its_wall_time_is_aborted() -> None:
    h = Harness(budget=Budget(max_wall_seconds=0.01))
    report = await h.run([("c1", "waiter")])  # waits for a gate nobody opens
    assert "wall-time budget exceeded" in report["c1"]["result"]["message"]
    assert [o.outcome for o in h.outcomes] == ["abort"]


async def test_a_failing_factory_is_a_pre_spawn_rejection() -> None:
    def broken(_ctx: ChildContext) -> Agent:
        raise RuntimeError("no checkout")

    h = Harness(children={"broken": ChildSpec(broken)})
    report = await h.run([("c1", "broken")])
    assert (
        "the agent factory of sub-agent 'broken' failed: RuntimeError: no checkout"
        in (report["c1"]["result"]["message"])
    )
    (outcome,) = h.outcomes
    assert outcome.outcome == "rejected" and outcome.context is not None
    assert await h.store.list(outcome.delegation_id) == []


async def test_the_parents_abort_reaches_its_children() -> None:
    h = Harness()
    session = h.parent([("c1", "waiter")]).create_session("parent")

    def abort_once_started(event: Any) -> None:
        if event["type"] == "tool_call" and event["sessionId"] != "parent":
            session.abort("user pressed stop")

    h.supervisor.subscribe(abort_once_started)
    with pytest.raises(Exception) as raised:
        await session.run("go")
    assert type(raised.value).__name__ == "RunAbortedError"
    (outcome,) = h.outcomes
    assert outcome.outcome == "abort" and "parent run was aborted" in outcome.reason
    entries = await h.store.list(outcome.delegation_id)
    checkpoints = [e["data"] for e in entries if e.get("customType") == "prism.checkpoint"]
    assert checkpoints[-1]["phase"] == "end"  # its run was closed, not left to resume
    assert [
        e["data"]["outcome"] for e in entries if e.get("customType") == "prism.subagent.outcome"
    ] == ["abort"]
    assert h.supervisor.running == 0


async def test_lifecycle_events_are_redacted_with_the_parents_secrets() -> None:
    h = Harness()
    calls = [("c1", "explorer")]
    script = parent_script(calls)

    def leaky(request: Any) -> list[Any]:
        events = script(request)
        if events[0].get("type") == "tool_call":
            return [
                provider_tool_call(
                    "c1", "delegate", {"child": "explorer", "task": f"use {SECRET}"}
                ),
                provider_done("tool_use"),
            ]
        return events

    parent = create_agent(
        model=MODEL,
        provider=create_mock_provider(leaky),
        tools=[h.supervisor.tool],
        store=h.store,
        secrets=[SECRET],
    )
    session = parent.create_session("parent")
    session.subscribe(h.record)
    await session.run("go")
    assert SECRET not in json.dumps(h.events)
    assert h.events[0]["task"].startswith("use ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"children": {}}, "non-empty {name: ChildSpec} mapping"),
        ({"children": {"bad name": ChildSpec(lambda c: None)}}, "child name 'bad name'"),  # type: ignore[arg-type,return-value]
        ({"children": {"a": object()}}, "child 'a' must be a ChildSpec"),
        ({"max_concurrency": 0}, "max_concurrency must be at least 1"),
        ({"hooks": {"before": print}}, "unknown supervisor hook(s) ['before']"),
        ({"max_answer_chars": 10}, "max_answer_chars must be at least 200"),
        ({"tool_name": ""}, "tool_name must be a tool name"),
    ],
)
def test_bad_supervisor_options_are_refused(options: dict[str, Any], message: str) -> None:
    options = {"children": {"a": ChildSpec(lambda c: None)}, **options}  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError) as raised:
        create_supervisor(**options)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tokens", 0),
        ("max_tool_rounds", 1.5),
        ("max_wall_seconds", float("nan")),
        ("max_delegations", True),
    ],
)
def test_bad_budgets_are_refused(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"Budget.{field}"):
        Budget(**{field: value})


def call_context(h: Harness, call_id: str, events: list[Any]) -> ToolContext:
    return ToolContext(
        session_id="parent",
        run_id="run_x",
        tool_call_id=call_id,
        store=h.store,
        event_sink=events.append,
    )


async def test_a_delegation_run_again_returns_the_stored_outcome_without_rerunning() -> None:
    h = Harness()
    events: list[Any] = []
    args = {"child": "explorer", "task": "map it"}
    first = await h.supervisor.tool.execute(args, call_context(h, "c9", events))  # type: ignore[misc]
    again = await h.supervisor.tool.execute(args, call_context(h, "c9", events))  # type: ignore[misc]
    assert again == first and first["answer"] == "explored {}"
    assert len(h.contexts) == 1  # the factory ran once
    assert [e["type"] for e in events] == ["subagent_started", "subagent_stopped"]
    assert [o.outcome for o in h.outcomes] == ["success"]


async def test_a_child_that_finished_before_its_outcome_was_stored_is_not_rerun() -> None:
    h = Harness()
    delegation = delegation_id_for("parent", "run_x", "c7")
    # As a crash would leave it: the child's run ended, no outcome entry.
    child = create_agent(model=MODEL, provider=create_mock_provider(child_script(None, "early ")))
    session = child.create_session(delegation, store=h.store)
    await session.append_custom("prism.subagent", {"delegationId": delegation})
    await session.run("map it", durable=True)
    value = await h.supervisor.tool.execute(  # type: ignore[misc]
        {"child": "explorer", "task": "map it"}, call_context(h, "c7", [])
    )
    assert value["answer"] == "early {}"
    (ctx,) = h.contexts
    assert ctx.resumed is True
    entries = await h.store.list(delegation)
    assert sum(e["kind"] == "message" and e["message"]["role"] == "assistant" for e in entries) == 1
    assert [o.outcome for o in h.outcomes] == ["success"]


async def test_lifecycle_events_match_their_typed_contract() -> None:
    by_type = {get_args(get_type_hints(c)["type"])[0]: c for c in get_args(AgentEvent)}
    h = Harness(max_concurrency=1)
    await h.run([("c1", "explorer"), ("c2", "nobody")])
    assert {e["type"] for e in h.events} == {"subagent_started", "subagent_stopped"}
    for event in h.events:
        hints = get_type_hints(by_type[event["type"]], include_extras=True)
        required = {k for k, hint in hints.items() if get_origin(hint) is not NotRequired}
        assert required <= set(event) <= set(hints), event
