"""The runner: every case (times ``repeats``) through the agent, at most
``concurrency`` at a time, each in its own session on ``store`` so a failing
case can be opened later (``prism inspect``), then graded by its evaluators.

A transient failure (a provider error marked retryable, or a 429/5xx) is
retried in a fresh session up to ``retries`` times; a case that takes longer
than ``timeout_s`` is cancelled and recorded as an error. The agent is used
only through the runtime's public API (``create_session``, ``run``).
"""

from __future__ import annotations

import math
import re
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio

from prism.evals.case import Case, EvalContext, Evaluator, EvaluatorResult
from prism.evals.dataset import Dataset
from prism.evals.errors import EvalError
from prism.evals.judge import LlmJudge, RubricCheck
from prism.evals.report import CaseRun, EvalReport

__all__ = ["Pricing", "run_eval", "run_eval_sync"]

_UNSAFE_ID = re.compile(r"[^\w.-]+")


@dataclass(frozen=True, slots=True)
class Pricing:
    """Prices per million tokens; a run's cost is its usage times these."""

    input_per_million: float
    output_per_million: float
    cache_read_per_million: float | None = None

    def cost(self, usage: Mapping[str, Any]) -> float:
        cached = int(usage.get("cacheReadTokens", 0) or 0)
        fresh = int(usage.get("inputTokens", 0) or 0)
        cache_price = self.cache_read_per_million
        if cache_price is None:
            cache_price, cached = 0.0, 0
        total = (
            (fresh - cached) * self.input_per_million
            + cached * cache_price
            + int(usage.get("outputTokens", 0) or 0) * self.output_per_million
        )
        return total / 1_000_000


def _transient(error: BaseException) -> bool:
    from prism.errors import ProviderError

    if not isinstance(error, ProviderError):
        return False
    info: Mapping[str, Any] = error.info
    status = info.get("status")
    return (
        bool(info.get("retryable")) or status == 429 or (isinstance(status, int) and status >= 500)
    )


def _tool_calls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if isinstance(block, Mapping) and block.get("type") == "tool_call":
                calls.append({"name": block.get("name"), "arguments": block.get("arguments", {})})
    return calls


def _status(results: Sequence[EvaluatorResult]) -> str:
    statuses = {r.status for r in results}
    return "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"


@dataclass(slots=True)
class _Plan:
    """The frozen settings of one eval run."""

    agent: Any
    evaluators: tuple[Evaluator, ...]
    judge: LlmJudge | None
    retries: int
    retry_backoff_s: float
    timeout_s: float | None
    store: Any
    pricing: Pricing | None
    run_options: Mapping[str, Any]
    tag: str

    def evaluators_for(self, case: Case) -> list[Evaluator]:
        chosen = [*self.evaluators, *case.evaluators]
        if case.rubric and not any(isinstance(e, LlmJudge | RubricCheck) for e in chosen):
            chosen.append(self.judge if self.judge is not None else _NoJudge())
        # A row's llm_rubric is graded by the run's judge (an error without one).
        judge = self.judge
        return [
            judge.with_rubric(e.rubric) if isinstance(e, RubricCheck) and judge else e
            for e in chosen
        ]

    def session_id(self, case: Case, repeat: int, attempt: int) -> str:
        base = f"eval-{self.tag}-{_UNSAFE_ID.sub('_', case.name)}-r{repeat}"
        return base if attempt == 0 else f"{base}-a{attempt}"


class _NoJudge(Evaluator):
    name = "judge"

    async def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        return EvaluatorResult(self.name, "error", "the case has a rubric but the run has no judge")


async def _grade(evaluator: Evaluator, ctx: EvalContext) -> EvaluatorResult:
    try:
        result = await evaluator.evaluate(ctx)
    except Exception as error:
        return EvaluatorResult(evaluator.name, "error", f"{type(error).__name__}: {error}")
    if not isinstance(result, EvaluatorResult):
        return EvaluatorResult(evaluator.name, "error", f"returned {type(result).__name__}")
    return result


async def _attempt(plan: _Plan, case: Case, session_id: str) -> tuple[Any, Any, float]:
    """One agent run: (result or the exception, the session, seconds)."""
    session = plan.agent.create_session(session_id, plan.store)
    timeout = case.timeout_s if case.timeout_s is not None else plan.timeout_s
    started = time.perf_counter()
    outcome: Any
    try:
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            outcome = await session.run(case.input, **plan.run_options)
    except TimeoutError:
        outcome = TimeoutError(f"timed out after {timeout}s")
    except Exception as error:
        outcome = error
    return outcome, session, round(time.perf_counter() - started, 6)


async def _run_case(plan: _Plan, case: Case, repeat: int) -> CaseRun:
    attempt = 0
    while True:
        session_id = plan.session_id(case, repeat, attempt)
        outcome, session, elapsed = await _attempt(plan, case, session_id)
        if not (isinstance(outcome, Exception) and _transient(outcome)) or attempt >= plan.retries:
            break
        attempt += 1
        if plan.retry_backoff_s:
            await anyio.sleep(plan.retry_backoff_s * 2 ** (attempt - 1))
    messages = list(await session.messages())
    run = CaseRun(
        case=case.name,
        repeat=repeat,
        status="error",
        session_id=session_id,
        input=case.input,
        expected=case.expected,
        latency_s=elapsed,
        attempts=attempt + 1,
        messages=messages,
        metadata=dict(case.metadata),
        source=case.source,
        tool_calls=_tool_calls(messages),
    )
    if isinstance(outcome, Exception):
        run.error = f"{type(outcome).__name__}: {outcome}"
        return run
    run.output, run.usage = outcome.text, dict(outcome.usage)
    run.cost = plan.pricing.cost(outcome.usage) if plan.pricing is not None else None
    ctx = EvalContext(
        case, outcome.text, outcome.output, messages, run.tool_calls, outcome.usage,
        elapsed, run.cost, session_id,
    )  # fmt: skip
    run.evaluators = [await _grade(e, ctx) for e in plan.evaluators_for(case)]
    run.status = _status(run.evaluators)  # type: ignore[assignment]
    return run


def _check_positive(name: str, value: Any, *, allow_zero: bool = False) -> None:
    low = 0 if allow_zero else 1
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise EvalError(f"{name} must be an integer >= {low} (got {value!r})")


async def run_eval(
    dataset: Dataset | Sequence[Case],
    agent: Any,
    *,
    evaluators: Sequence[Evaluator] = (),
    judge: Any = None,
    concurrency: int = 4,
    repeats: int = 1,
    retries: int = 2,
    retry_backoff_s: float = 1.0,
    timeout_s: float | None = 120.0,
    store: Any = None,
    store_label: str | None = None,
    pricing: Pricing | None = None,
    run_options: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    name: str | None = None,
) -> EvalReport:
    """Run every case of ``dataset`` on ``agent`` and grade it; see the module
    docstring and docs/evals.md. ``judge`` (an Agent, or an ``LlmJudge``)
    grades the cases that carry a ``rubric``; ``store`` keeps every case's
    session (default: the agent's own store), ``store_label`` is what the
    report names it (a path for ``prism inspect``); ``progress`` shows a
    progress bar (default: only when stderr is a terminal)."""
    from prism.runtime import Agent

    if not isinstance(agent, Agent):
        raise EvalError(f"run_eval needs a prism Agent, got {type(agent).__name__}")
    data = dataset if isinstance(dataset, Dataset) else Dataset(tuple(dataset))
    _check_positive("concurrency", concurrency)
    _check_positive("repeats", repeats)
    _check_positive("retries", retries, allow_zero=True)
    if timeout_s is not None and not timeout_s > 0:
        raise EvalError(f"timeout_s must be > 0 or None (got {timeout_s!r})")
    if judge is not None and not isinstance(judge, LlmJudge):
        judge = LlmJudge(agent=judge)
    plan = _Plan(
        agent, tuple(evaluators), judge, retries, retry_backoff_s, timeout_s, store, pricing,
        dict(run_options or {}), uuid.uuid4().hex[:8],
    )  # fmt: skip
    jobs = [
        (index, case, repeat) for index, case in enumerate(data.cases) for repeat in range(repeats)
    ]
    results: dict[tuple[int, int], CaseRun] = {}
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    limiter = anyio.CapacityLimiter(concurrency)
    with _ProgressBar(progress, len(jobs), data.name) as advance:

        async def one(index: int, case: Case, repeat: int) -> None:
            async with limiter:
                results[index, repeat] = await _run_case(plan, case, repeat)
            advance()

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(one, *job)
    return EvalReport(
        name=name or data.name,
        runs=[results[key] for key in sorted(results)],
        problems=list(data.problems),
        config={
            "concurrency": concurrency,
            "repeats": repeats,
            "retries": retries,
            "timeoutS": timeout_s,
            "model": dict(agent.config.model),
        },
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 6),
        store=store_label,
    )


def run_eval_sync(dataset: Dataset | Sequence[Case], agent: Any, **options: Any) -> EvalReport:
    """:func:`run_eval` from a script or a test with no event loop running."""
    return anyio.run(lambda: run_eval(dataset, agent, **options))


class _ProgressBar:
    """A rich progress bar on stderr when it is a terminal (or when asked);
    a no-op otherwise, so CI logs stay clean."""

    def __init__(self, wanted: bool | None, total: int, label: str) -> None:
        stream = sys.stderr
        self.enabled = wanted if wanted is not None else bool(stream and stream.isatty())
        self.total, self.label = total, label
        self.bar: Any = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import Progress

        self.bar = Progress(console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task(f"eval {self.label}", total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
