"""Refused at definition: an unbounded cycle, an unreachable step, an edge to
nowhere, a step without types; and the loop nesting that keeps runs finite."""

from __future__ import annotations

import pytest

from prism.workflows import END, Workflow, WorkflowDefinitionError, loop


def test_an_unbounded_cycle_is_refused_naming_it() -> None:
    flow = Workflow("cyclic")

    @flow.step(next="b")
    def a(x: int) -> int:
        return x

    @flow.step(next="a")
    def b(x: int) -> int:
        return x

    with pytest.raises(WorkflowDefinitionError, match=r"unbounded cycle a -> b -> a"):
        flow.validate()


def test_a_cycle_through_a_loop_edge_is_accepted() -> None:
    flow = Workflow("bounded")

    @flow.step(next="b")
    def a(x: int) -> int:
        return x

    @flow.gate(routes={"again": loop("a", max=3), "stop": END})
    def b(x: int) -> str:
        return "stop"

    assert flow.validate() is flow


def test_a_loops_then_edge_counts_as_unbounded() -> None:
    flow = Workflow("then-cycle")

    @flow.step(next="b")
    def a(x: int) -> int:
        return x

    @flow.gate(routes={"again": loop("a", max=3, then="a")})
    def b(x: int) -> str:
        return "again"

    with pytest.raises(WorkflowDefinitionError, match="unbounded cycle"):
        flow.validate()


def test_an_unreachable_step_is_refused_naming_it() -> None:
    flow = Workflow("island")

    @flow.step(next=END)
    def a(x: int) -> int:
        return x

    @flow.step(next=END)
    def orphan(x: int) -> int:
        return x

    with pytest.raises(WorkflowDefinitionError, match=r"\['orphan'\] cannot be reached"):
        flow.validate()


def test_an_edge_to_an_unknown_step_is_refused() -> None:
    flow = Workflow("dangling")

    @flow.step(next="missing")
    def a(x: int) -> int:
        return x

    with pytest.raises(WorkflowDefinitionError, match="goes to 'missing'"):
        flow.validate()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x: int): return x", "needs a return annotation"),
        ("def f(x: int, y: int) -> int: return x", "exactly one value parameter"),
    ],
)
def test_a_step_without_its_types_is_refused(source: str, message: str) -> None:
    flow = Workflow("untyped")
    namespace: dict[str, object] = {}
    exec(source, namespace)
    with pytest.raises(WorkflowDefinitionError, match=message):
        flow.step(next=END)(namespace["f"])


def test_bad_edges_and_loops_are_refused_at_the_decorator() -> None:
    flow = Workflow("edges")
    with pytest.raises(WorkflowDefinitionError, match="needs next="):
        flow.step(next=None)
    with pytest.raises(WorkflowDefinitionError, match="max must be an int >= 1"):
        loop("a", max=0)
    with pytest.raises(WorkflowDefinitionError, match="decision routes"):
        flow.decision(question="?", routes={"maybe": END})
    with pytest.raises(WorkflowDefinitionError, match="non-empty name"):
        Workflow("")

    @flow.step(next=END)
    def a(x: int) -> int:
        return x

    with pytest.raises(WorkflowDefinitionError, match="already has a step 'a'"):
        flow.step(next=END)(a)


def test_an_outer_loop_restarts_the_inner_loops_counter() -> None:
    flow = Workflow("nested")

    @flow.step(next="check")
    def work(x: int) -> int:
        return x

    @flow.gate(routes={"retry": loop(work, max=2), "ok": "next_task"})
    def check(x: int) -> str:
        return "ok"

    @flow.gate(routes={"more": loop(work, max=10), "done": END})
    def next_task(x: int) -> str:
        return "done"

    flow.validate()
    assert flow.loop_resets == {"check:retry": [], "next_task:more": ["check:retry"]}
