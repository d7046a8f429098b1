"""The built-in evaluators: text checks, schema and type checks, expected
tool calls, cost and latency budgets, and custom Python functions.

Each built without a value of its own (``Equals()``, ``Contains()``)
compares against the case's ``expected``, like pydantic-evals'
``EqualsExpected``. ``evaluator_from_spec`` reads the promptfoo-style
``{"type": "contains", "value": ...}`` form that dataset files use.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prism.evals.case import EvalContext, Evaluator, EvaluatorResult, Status
from prism.evals.errors import DatasetError
from prism.evals.judge import RubricCheck

__all__ = [
    "Contains",
    "CostBudget",
    "Equals",
    "FunctionEvaluator",
    "IsType",
    "LatencyBudget",
    "MatchesJsonSchema",
    "Regex",
    "ToolCalls",
    "evaluator",
    "evaluator_from_spec",
]

_UNSET: Any = object()


def _expected(ctx: EvalContext, value: Any, name: str) -> Any:
    if value is not _UNSET:
        return value
    if ctx.case.expected is None:
        raise DatasetError(f"{name}: case {ctx.case.name!r} has no expected output to compare")
    return ctx.case.expected


def _subject(ctx: EvalContext) -> Any:
    """What text checks look at: the structured value when there is one."""
    return ctx.value if ctx.value is not None else ctx.output


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Equals(Evaluator):
    """The output (or structured value) equals ``value``, else the case's expected."""

    name = "equals"

    def __init__(self, value: Any = _UNSET, *, strip: bool = True) -> None:
        self.value = value
        self.strip = strip

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        want = _expected(ctx, self.value, self.name)
        got = _subject(ctx)
        if isinstance(want, str) and isinstance(got, str) and self.strip:
            want, got = want.strip(), got.strip()
        elif isinstance(want, str) and not isinstance(got, str):
            got = json.dumps(got, default=str)
        return self.result(got == want, f"expected {_short(want)!r}, got {_short(got)!r}")


class Contains(Evaluator):
    """The output text contains ``value`` (else the case's expected)."""

    name = "contains"

    def __init__(self, value: Any = _UNSET, *, case_sensitive: bool = True) -> None:
        self.value = value
        self.case_sensitive = case_sensitive

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        want = str(_expected(ctx, self.value, self.name))
        got = ctx.output
        if not self.case_sensitive:
            want, got = want.casefold(), got.casefold()
        found = want in got
        return self.result(found, f"{'found' if found else 'missing'} {_short(want)!r}")


class Regex(Evaluator):
    """The output text matches ``pattern`` (``re.search``)."""

    name = "regex"

    def __init__(self, pattern: str, *, flags: int = 0) -> None:
        try:
            self.pattern = re.compile(pattern, flags)
        except (re.error, TypeError) as error:
            raise DatasetError(f"regex: invalid pattern {pattern!r}: {error}") from None

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        matched = self.pattern.search(ctx.output) is not None
        verb = "matches" if matched else "does not match"
        return self.result(matched, f"output {verb} /{self.pattern.pattern}/")


def _json_of(ctx: EvalContext) -> Any:
    if ctx.value is not None:
        if hasattr(ctx.value, "model_dump"):
            return ctx.value.model_dump(mode="json")
        return ctx.value
    text = ctx.output.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    return json.loads(fence.group(1) if fence else text)


class MatchesJsonSchema(Evaluator):
    """The output (JSON text, or the structured value) validates against ``schema``."""

    name = "json_schema"

    def __init__(self, schema: Mapping[str, Any]) -> None:
        import jsonschema

        try:
            jsonschema.validators.validator_for(schema).check_schema(dict(schema))
        except jsonschema.SchemaError as error:
            raise DatasetError(f"json_schema: invalid schema: {error.message}") from None
        self.validator = jsonschema.validators.validator_for(schema)(schema)

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        try:
            data = _json_of(ctx)
        except ValueError as error:
            return self.result(False, f"output is not JSON: {error}")
        problems = sorted(self.validator.iter_errors(data), key=lambda e: list(e.path))
        if not problems:
            return self.result(True, "valid")
        where = "/".join(str(p) for p in problems[0].path) or "(root)"
        return self.result(False, f"{where}: {problems[0].message}")


class IsType(Evaluator):
    """The output (JSON text, or the structured value) validates as ``type_``
    (a pydantic model, dataclass, TypedDict or any type pydantic's
    ``TypeAdapter`` takes)."""

    name = "type"

    def __init__(self, type_: Any) -> None:
        from pydantic import TypeAdapter

        self.adapter: Any = TypeAdapter(type_)
        self.name = f"type:{getattr(type_, '__name__', str(type_))}"

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        from pydantic import ValidationError

        try:
            data = _json_of(ctx)
        except ValueError as error:
            return self.result(False, f"output is not JSON: {error}")
        try:
            self.adapter.validate_python(data)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            return self.result(False, f"{where}: {first['msg']}")
        return self.result(True, "valid")


_ORDERS = ("exact", "in_order", "any")


def _call_matches(want: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    """Same name, and every expected argument equal (others may be extra)."""
    if want.get("name") != got.get("name"):
        return False
    arguments = got.get("arguments") or {}
    return all(arguments.get(k) == v for k, v in (want.get("arguments") or {}).items())


class ToolCalls(Evaluator):
    """The run asked for the expected tool calls. Each expected call is a
    name or ``{"name", "arguments"}`` (arguments given must be equal; others
    may be present). ``order``: ``exact`` (these calls and no others, in
    this order), ``in_order`` (these in this order, others between allowed)
    or ``any`` (each present, any order)."""

    name = "tool_calls"

    def __init__(self, expected: Sequence[str | Mapping[str, Any]], *, order: str = "in_order"):
        if order not in _ORDERS:
            raise DatasetError(f"tool_calls: order must be one of {', '.join(_ORDERS)}")
        calls: list[dict[str, Any]] = []
        for call in expected:
            if isinstance(call, str):
                calls.append({"name": call})
            elif isinstance(call, Mapping) and isinstance(call.get("name"), str):
                calls.append(dict(call))
            else:
                raise DatasetError(
                    f"tool_calls: each call is a name or {{name, arguments}}: {call!r}"
                )
        self.expected = calls
        self.order = order

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        got = list(ctx.tool_calls)
        names = [c.get("name") for c in got]
        if self.order == "exact":
            ok = len(got) == len(self.expected) and all(
                _call_matches(w, g) for w, g in zip(self.expected, got, strict=True)
            )
        elif self.order == "in_order":
            remaining = iter(got)
            ok = all(any(_call_matches(w, g) for g in remaining) for w in self.expected)
        else:
            pool = list(got)
            ok = True
            for want in self.expected:
                hit = next((g for g in pool if _call_matches(want, g)), None)
                if hit is None:
                    ok = False
                    break
                pool.remove(hit)
        wanted = [c["name"] for c in self.expected]
        return self.result(ok, f"expected {wanted} ({self.order}), got {names}")


class CostBudget(Evaluator):
    """The run stayed within token and/or cost budgets (cost needs the
    runner's ``pricing``; without it a cost budget is an error)."""

    name = "cost"

    def __init__(
        self,
        *,
        max_cost: float | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_total_tokens: int | None = None,
    ) -> None:
        self.limits = {
            "inputTokens": max_input_tokens,
            "outputTokens": max_output_tokens,
            "totalTokens": max_total_tokens,
        }
        self.max_cost = max_cost
        if max_cost is None and all(v is None for v in self.limits.values()):
            raise DatasetError("cost: give max_cost or a max_*_tokens budget")

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        usage: Mapping[str, Any] = ctx.usage
        over = []
        for key, limit in self.limits.items():
            used = usage.get(key)
            if key == "totalTokens" and used is None:
                used = usage.get("inputTokens", 0) + usage.get("outputTokens", 0)
            if limit is not None and (used or 0) > limit:
                over.append(f"{key} {used} > {limit}")
        if self.max_cost is not None:
            if ctx.cost is None:
                return EvaluatorResult(self.name, "error", "max_cost needs the runner's pricing")
            if ctx.cost > self.max_cost:
                over.append(f"cost {ctx.cost:.6f} > {self.max_cost}")
        return self.result(not over, "; ".join(over) or "within budget")


class LatencyBudget(Evaluator):
    """The run took at most ``max_seconds`` (wall clock, the agent run only)."""

    name = "latency"

    def __init__(self, max_seconds: float) -> None:
        if not isinstance(max_seconds, int | float) or not max_seconds > 0:
            raise DatasetError(f"latency: max_seconds must be > 0 (got {max_seconds!r})")
        self.max_seconds = float(max_seconds)

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        ok = ctx.latency_s <= self.max_seconds
        return self.result(ok, f"{ctx.latency_s:.3f}s (budget {self.max_seconds}s)")


EvaluatorFunction = Callable[[EvalContext], Any]


@dataclass
class FunctionEvaluator(Evaluator):
    """A custom evaluator from a function ``(ctx) -> bool | float |
    (bool, reason) | EvaluatorResult``, sync or async. A float is a score
    that passes at ``threshold`` or above."""

    function: EvaluatorFunction
    name: str = "custom"
    threshold: float = 0.5

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        produced = self.function(ctx)
        if inspect.isawaitable(produced):
            produced = await produced
        return _coerce(self.name, produced, self.threshold)


def _coerce(name: str, produced: Any, threshold: float) -> EvaluatorResult:
    if isinstance(produced, EvaluatorResult):
        return produced
    reason = ""
    if isinstance(produced, tuple) and len(produced) == 2 and isinstance(produced[1], str):
        produced, reason = produced
    if isinstance(produced, bool):
        return EvaluatorResult(name, "pass" if produced else "fail", reason)
    if isinstance(produced, int | float):
        score = float(produced)
        status: Status = "pass" if score >= threshold else "fail"
        return EvaluatorResult(name, status, reason or f"score {score:g}", score)
    why = f"returned {type(produced).__name__}; expected bool, float or a result"
    return EvaluatorResult(name, "error", why)


def evaluator(
    function: Callable[[EvalContext], Any] | None = None,
    *,
    name: str | None = None,
    threshold: float = 0.5,
) -> Any:
    """Decorate ``def check(ctx) -> bool | float | (bool, reason)`` (or an
    async one) to make it an evaluator named after the function."""

    def wrap(fn: Callable[[EvalContext], Any | Awaitable[Any]]) -> FunctionEvaluator:
        return FunctionEvaluator(fn, name or fn.__name__, threshold)

    return wrap(function) if function is not None else wrap


def _spec_value(spec: Mapping[str, Any], key: str = "value") -> Any:
    return spec[key] if key in spec else _UNSET


_SPEC_BUILDERS: dict[str, Callable[[Mapping[str, Any]], Evaluator]] = {
    "equals": lambda s: Equals(_spec_value(s)),
    "contains": lambda s: Contains(_spec_value(s), case_sensitive=s.get("case_sensitive", True)),
    "icontains": lambda s: Contains(_spec_value(s), case_sensitive=False),
    "regex": lambda s: Regex(s["value"]),
    "json_schema": lambda s: MatchesJsonSchema(s["value"]),
    "tool_calls": lambda s: ToolCalls(s["value"], order=s.get("order", "in_order")),
    "cost": lambda s: CostBudget(
        max_cost=s.get("max_cost"),
        max_input_tokens=s.get("max_input_tokens"),
        max_output_tokens=s.get("max_output_tokens"),
        max_total_tokens=s.get("max_total_tokens"),
    ),
    "latency": lambda s: LatencyBudget(s["max_seconds"]),
    "llm_rubric": lambda s: RubricCheck(s["value"]),
}


def evaluator_from_spec(spec: Any) -> Evaluator:
    """An evaluator from its dataset-file form, e.g. ``{"type": "regex",
    "value": "^4$"}``. Types: equals, contains, icontains, regex,
    json_schema, tool_calls (``order``), cost (``max_cost``,
    ``max_*_tokens``), latency (``max_seconds``), llm_rubric (graded by the
    run's judge)."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("type"), str):
        raise DatasetError(f"an assertion must be an object with a 'type' (got {spec!r})")
    kind = spec["type"]
    build = _SPEC_BUILDERS.get(kind)
    if build is None:
        raise DatasetError(f"unknown assertion type {kind!r} (one of {', '.join(_SPEC_BUILDERS)})")
    try:
        return build(spec)
    except KeyError as missing:
        raise DatasetError(f"assertion {kind!r} needs {missing}") from None
    except TypeError as error:
        raise DatasetError(f"assertion {kind!r}: {error}") from None
