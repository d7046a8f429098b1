"""Defining a workflow: typed steps, explicit edges, bounded loops.

A ``Workflow`` collects steps through decorators (``step``, ``agent``,
``tool``, ``check``, ``gate``, ``compaction``, ``decision``); each names
where it goes next (``next=`` a step, ``END`` or a ``loop(...)``; a gate
or decision names ``routes={label: target}``). ``validate()`` refuses a
graph that could run forever or holds a step nothing reaches, before any
run stores anything (docs/workflows.md has the rules).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

from prism.approvals import ApprovalDecision
from prism.workflows.context import StepContext
from prism.workflows.errors import WorkflowDefinitionError

__all__ = ["END", "Loop", "Route", "Step", "StepKind", "Workflow", "loop"]

StepKind = Literal["step", "agent", "tool", "check", "gate", "compaction", "decision"]
DECISION_ROUTES = frozenset({"approve", "deny", "edit"})


class _End:
    __slots__ = ()

    def __repr__(self) -> str:
        return "END"


END: Any = _End()
"""The edge target that finishes the workflow with the value it carries."""


@dataclass(frozen=True, slots=True)
class Loop:
    """A bounded edge back to ``target``: taken at most ``max`` times in a
    row (the counter restarts when an enclosing loop goes round), then the
    workflow goes to ``then`` (or fails with ``LoopLimitError``)."""

    target: str
    max: int
    then: Any = None


def loop(target: str | Callable[..., Any], *, max: int, then: Any = None) -> Loop:
    """A bounded edge: see :class:`Loop`. ``target``/``then`` are step names
    or the decorated functions."""
    if isinstance(max, bool) or not isinstance(max, int) or max < 1:
        raise WorkflowDefinitionError(f"loop to {target!r}: max must be an int >= 1, got {max!r}")
    return Loop(_name_of(target), max, None if then is None else _target_of(then))


@dataclass(frozen=True, slots=True)
class Route:
    """What a gate returns to route somewhere with a new value (a gate that
    returns only the label passes its input on unchanged)."""

    label: str
    value: Any


@dataclass(slots=True)
class Step:
    """One registered step: its function, kind, types and edges."""

    name: str
    kind: StepKind
    fn: Callable[..., Any]
    input_type: Any
    output_type: Any
    edges: dict[str, Any]  # label ("next" for a plain step) -> target name, END or Loop
    idempotent: bool
    parameters: tuple[str, ...]  # per parameter: "ctx", "decision" or "value"
    options: dict[str, Any] = field(default_factory=dict)
    input_adapter: TypeAdapter[Any] = field(init=False)
    output_adapter: TypeAdapter[Any] | None = field(init=False)
    fingerprint: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.input_adapter = TypeAdapter(self.input_type)
        self.output_adapter = (
            None if self.output_type is _NO_OUTPUT else TypeAdapter(self.output_type)
        )

    @property
    def routed(self) -> bool:
        return "next" not in self.edges


_NO_OUTPUT: Any = object()  # a gate's value is its input or its Route's value


def _name_of(target: Any) -> str:
    name = getattr(target, "__workflow_step__", None) or target
    if not isinstance(name, str) or not name:
        raise WorkflowDefinitionError(f"an edge target must be a step name, got {target!r}")
    return name


def _target_of(spec: Any) -> Any:
    if spec is END or isinstance(spec, Loop):
        return spec
    return _name_of(spec)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or repr(tp)


class Workflow:
    """A named graph of typed steps (docs/workflows.md).

    The first step registered is where a run starts (``start=True`` picks
    another). Steps are plain or async functions ``f(value) -> Out``; one
    parameter annotated ``StepContext`` gets the step's context, and a
    decision step's parameter annotated ``ApprovalDecision`` gets the
    human's answer. The value's parameter and the return are annotated: the
    return type is checked (pydantic, strict) after every call.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise WorkflowDefinitionError("a workflow needs a non-empty name")
        self.name = name
        self.steps: dict[str, Step] = {}
        self.start: str | None = None
        self._validated = False

    # --- registering steps ------------------------------------------------------

    def step(self, *, next: Any, idempotent: bool = False, start: bool = False) -> Any:
        """Plain Python. Not idempotent by default: a crash while it ran
        pauses the workflow for a human to say whether to run it again."""
        return self._register("step", next=next, idempotent=idempotent, start=start)

    def agent(self, *, next: Any, start: bool = False) -> Any:
        """A step that runs agents through ``ctx.run_agent(session, input)``:
        each run is durable and a crash continues it from its own checkpoint."""
        return self._register("agent", next=next, idempotent=True, start=start)

    def tool(self, tool: Any, *, next: Any, start: bool = False) -> Any:
        """Calls ``tool`` (a ``ToolDefinition``) with the arguments the
        decorated function returns; the step's value is the ``ToolResult``.
        Idempotent when the tool says so."""
        return self._register(
            "tool",
            next=next,
            idempotent=bool(getattr(tool, "idempotent", False)),
            start=start,
            options={"tool": tool},
        )

    def check(self, *, next: Any, start: bool = False) -> Any:
        """A check of the value (tests, a validator): must have no side
        effect, so it runs again after a crash."""
        return self._register("check", next=next, idempotent=True, start=start)

    def gate(self, *, routes: Mapping[str, Any], start: bool = False) -> Any:
        """Returns a route label (the value goes on unchanged) or a
        ``Route(label, value)``; must have no side effect."""
        return self._register("gate", routes=routes, idempotent=True, start=start)

    def compaction(self, *, next: Any, start: bool = False) -> Any:
        """Compacts sessions at a task boundary (``ctx.compact(session)``)."""
        return self._register("compaction", next=next, idempotent=True, start=start)

    def decision(
        self,
        *,
        question: str | Callable[[Any], str],
        next: Any = None,
        routes: Mapping[str, Any] | None = None,
        start: bool = False,
    ) -> Any:
        """A human decides: the workflow pauses with a pending approval
        (``question`` as its reason) until ``resume_workflow(decisions=...)``
        answers it from any process; then the function runs with the
        ``ApprovalDecision``. ``routes`` may route by its kind (``approve``,
        ``deny``, ``edit``)."""
        if (next is None) == (routes is None):
            raise WorkflowDefinitionError("a decision step takes next= or routes=, not both")
        if routes is not None and not set(routes) <= DECISION_ROUTES:
            raise WorkflowDefinitionError(
                f"decision routes must be among {sorted(DECISION_ROUTES)}, got {sorted(routes)}"
            )
        return self._register(
            "decision",
            next=next,
            routes=routes,
            idempotent=True,
            start=start,
            options={"question": question},
        )

    def _register(
        self,
        kind: StepKind,
        *,
        next: Any = None,
        routes: Mapping[str, Any] | None = None,
        idempotent: bool,
        start: bool,
        options: dict[str, Any] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        if routes is None:
            if next is None:
                raise WorkflowDefinitionError(f"a {kind} step needs next= (a step, END or a loop)")
            edges = {"next": _target_of(next)}
        else:
            if not routes:
                raise WorkflowDefinitionError(f"a {kind} step needs at least one route")
            edges = {str(label): _target_of(target) for label, target in routes.items()}

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            name = fn.__name__
            if name in self.steps:
                raise WorkflowDefinitionError(f"workflow {self.name!r} already has a step {name!r}")
            # The defining scope's names, so annotations naming a local class
            # resolve (``from __future__ import annotations`` makes them strings).
            scope = sys._getframe(1).f_locals
            value_type, output_type, parameters = _signature(self.name, kind, fn, scope)
            self.steps[name] = Step(
                name,
                kind,
                fn,
                value_type,
                output_type,
                edges,
                idempotent,
                parameters,
                dict(options or {}),
            )
            if start or self.start is None:
                self.start = name
            self._validated = False
            fn.__workflow_step__ = name  # type: ignore[attr-defined]
            return fn

        return register

    # --- validation ---------------------------------------------------------------

    def validate(self) -> Workflow:
        """Check the graph (once; again after a step is added): raises
        ``WorkflowDefinitionError`` naming the unknown target, the unbounded
        cycle or the unreachable steps."""
        if self._validated:
            return self
        if self.start is None:
            raise WorkflowDefinitionError(f"workflow {self.name!r} has no steps")
        for step in self.steps.values():
            for target in _targets(step):
                if target not in self.steps:
                    raise WorkflowDefinitionError(
                        f"step {step.name!r} goes to {target!r}, which is not a step of"
                        f" workflow {self.name!r}"
                    )
        cycle = _plain_cycle(self.steps)
        if cycle:
            raise WorkflowDefinitionError(
                f"workflow {self.name!r} has an unbounded cycle {' -> '.join(cycle)}; make one"
                " of its edges a loop(target, max=N)"
            )
        unreachable = sorted(set(self.steps) - _reachable(self.steps, self.start))
        if unreachable:
            raise WorkflowDefinitionError(
                f"workflow {self.name!r}: step(s) {unreachable} cannot be reached from its"
                f" start step {self.start!r}"
            )
        self.loop_resets = _loop_resets(self.steps)
        for step in self.steps.values():
            step.fingerprint = _fingerprint(step)
        self._validated = True
        return self


def _signature(
    workflow: str, kind: str, fn: Callable[..., Any], scope: Mapping[str, Any]
) -> tuple[Any, Any, tuple[str, ...]]:
    where = f"step {fn.__name__!r} of workflow {workflow!r}"
    try:
        hints = typing.get_type_hints(fn, localns=dict(scope))
    except Exception as error:  # an annotation that does not resolve
        raise WorkflowDefinitionError(f"{where}: cannot read its annotations ({error})") from None
    values: list[str] = []
    parameters: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name)
        if hint is StepContext:
            parameters.append("ctx")
        elif kind == "decision" and hint is ApprovalDecision:
            parameters.append("decision")
        else:
            parameters.append("value")
            values.append(param.name)
    if len(values) != 1:
        raise WorkflowDefinitionError(
            f"{where} must take exactly one value parameter (plus an optional StepContext"
            f"{' and ApprovalDecision' if kind == 'decision' else ''}), got {values}"
        )
    value_type = hints.get(values[0], Any)
    if kind == "gate":
        return value_type, _NO_OUTPUT, tuple(parameters)
    if "return" not in hints:
        raise WorkflowDefinitionError(f"{where} needs a return annotation (its output type)")
    output = hints["return"]
    if kind == "tool":
        output = dict[str, Any]  # the ToolResult; the function returns the arguments
    return value_type, output, tuple(parameters)


def _targets(step: Step) -> list[str]:
    out: list[str] = []
    for target in step.edges.values():
        if isinstance(target, Loop):
            out.append(target.target)
            if target.then is not None and target.then is not END:
                out.append(target.then)
        elif target is not END:
            out.append(target)
    return out


def _plain_edges(steps: Mapping[str, Step]) -> dict[str, set[str]]:
    """Edges that are not bounded by a loop counter (a loop's ``then`` is one)."""
    graph: dict[str, set[str]] = {name: set() for name in steps}
    for step in steps.values():
        for target in step.edges.values():
            if isinstance(target, Loop):
                if target.then is not None and target.then is not END:
                    graph[step.name].add(target.then)
            elif target is not END:
                graph[step.name].add(target)
    return graph


def _plain_cycle(steps: Mapping[str, Step]) -> list[str]:
    graph = _plain_edges(steps)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for name in steps:
        if name not in state:
            found = visit(name)
            if found:
                return found
    return []


def _reachable(steps: Mapping[str, Step], start: str) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for target in _targets(steps[todo.pop()]):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _closure(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def loop_key(step: str, label: str) -> str:
    return f"{step}:{label}"


def _loop_resets(steps: Mapping[str, Step]) -> dict[str, list[str]]:
    """For each loop edge, the loop edges whose counters restart when it is
    taken: those whose body (the steps on its cycle through plain edges) is
    strictly inside its own. Restarting only strictly smaller loops keeps
    every run finite: the outermost loops never restart, and each inner
    loop restarts only as often as the loops around it go round."""
    graph = _plain_edges(steps)
    reverse: dict[str, set[str]] = {name: set() for name in steps}
    for source, targets in graph.items():
        for target in targets:
            reverse[target].add(source)
    bodies: dict[str, frozenset[str]] = {}
    for step in steps.values():
        for label, target in step.edges.items():
            if isinstance(target, Loop):
                body = _closure(graph, target.target) & _closure(reverse, step.name)
                bodies[loop_key(step.name, label)] = frozenset(body)
    return {
        key: sorted(other for other, inner in bodies.items() if inner < body)
        for key, body in bodies.items()
    }


def _schema(adapter: TypeAdapter[Any] | None, tp: Any) -> Any:
    if adapter is None:
        return None
    try:
        return adapter.json_schema()
    except Exception:  # a type pydantic validates but cannot describe
        return _type_name(tp)


def _edge_json(target: Any) -> Any:
    if isinstance(target, Loop):
        return {"loop": target.target, "max": target.max, "then": _edge_json(target.then)}
    return None if target is END or target is None else target


def _fingerprint(step: Step) -> str:
    """What a stored run depends on: kind, types, edges and idempotence, not
    the function's body (a fixed bug may be resumed over)."""
    described = {
        "kind": step.kind,
        "input": _schema(step.input_adapter, step.input_type),
        "output": _schema(step.output_adapter, step.output_type),
        "edges": {label: _edge_json(t) for label, t in sorted(step.edges.items())},
        "idempotent": step.idempotent,
    }
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
