"""The benchmark's anchor rows: the dynamic programme against brute force
on cut-down cases (plain and trigger-only), and its cost model against the
benchmark's own scoring of a real session."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

pytest.importorskip("numpy", reason="numpy is a dev/bench dependency")

from benches.attention.optimum import (
    ScheduleModel,
    brute_force,
    build_model,
    evaluate,
    evaluate_fast,
    solve,
)

from prism._bench.attention.fixtures import Fixture, coding_turns
from prism._bench.attention.scenario import VariantResult, run_variant


def random_model(rng: random.Random) -> ScheduleModel:
    """A few runs of user / assistant (maybe thinking) / tool (maybe a
    stubbable result) / answer rows, with random sizes and keep rules."""
    raw = [rng.randint(5, 30)]
    t_pos: list[int] = []
    t_save: list[int] = []
    s_pos: list[int] = []
    s_save: list[int] = []
    lengths: list[int] = []
    thinking_rows: list[int] = []
    result_rows: list[int] = []
    s_all: list[int] = []
    for _ in range(rng.randint(2, 5)):
        raw.append(rng.randint(5, 40))
        lengths.append(len(raw))
        size = rng.randint(20, 200)
        raw.append(size)
        if rng.random() < 0.8:
            t_pos.append(len(raw) - 1)
            t_save.append(rng.randint(5, size - 1))
            thinking_rows.append(len(raw) - 1)
        if rng.random() < 0.8:
            size = rng.randint(30, 400)
            raw.append(size)
            result_rows.append(len(raw) - 1)
            if rng.random() < 0.9:  # else: a result whose stub would not be smaller
                s_pos.append(len(raw) - 1)
                s_save.append(rng.randint(5, size - 2))
                s_all.append(len(result_rows) - 1)
            lengths.append(len(raw))
        raw.append(rng.randint(5, 60))
    keep_thinking, keep_last = rng.choice([1, 2]), rng.choice([1, 2])
    t_elig = [max(sum(1 for r in thinking_rows if r < n) - keep_thinking, 0) for n in lengths]
    s_elig = [
        sum(1 for k in s_all if k < sum(1 for r in result_rows if r < n) - keep_last)
        for n in lengths
    ]
    seed = rng.choice([None, lengths[0] - 1])
    return ScheduleModel(raw, t_pos, t_save, s_pos, s_save, lengths, t_elig, s_elig, seed)


@pytest.mark.parametrize("seed", range(6))
def test_programme_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        model = random_model(rng)
        value, schedule = solve(model)
        assert value == pytest.approx(brute_force(model))
        # The schedule it returns costs what it says, by both evaluators.
        assert evaluate(model, schedule)[0] == pytest.approx(value)
        assert evaluate_fast(model, schedule)[0] == pytest.approx(value)
        trigger = rng.uniform(0.3, 0.9) * sum(model.raw)
        gated, gated_schedule = solve(model, trigger=trigger)
        assert gated == pytest.approx(brute_force(model, trigger=trigger))
        assert gated >= value - 1e-9
        assert evaluate(model, gated_schedule)[0] == pytest.approx(gated)


def test_programme_refuses_a_stream_it_cannot_model() -> None:
    # Nothing protected: the newest result is reducible the request it arrives.
    model = ScheduleModel([5, 5, 50], [], [], [2], [40], [2, 3], [0, 0], [0, 1])
    with pytest.raises(ValueError, match="not in the previous request"):
        solve(model)


SMALL_MODEL = {
    "provider": "mock",
    "model": "bench-80k",
    "limits": {"contextWindow": 80_000, "maxOutputTokens": 2_000},
}


class Keep:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def seed(self, request: dict[str, Any]) -> None:
        pass

    def feed(self, request: dict[str, Any]) -> None:
        self.requests.append(request)


def _schedule(model: ScheduleModel, final: dict[str, Any], requests: list[Any]) -> list[Any]:
    """(t, s) of each compiled request: how many of the oldest thinking
    items are stripped and tool items stubbed (checked to be prefixes)."""
    rows = [final.get("tools", []), *final["messages"]]
    out = []
    for request in requests:
        sent = [request.get("tools", []), *request["messages"]]
        stripped = [
            r
            for r in model.t_pos
            if r < len(sent) and not any(b.get("type") == "thinking" for b in sent[r]["content"])
        ]
        stubbed = [r for r in model.s_pos if r < len(sent) and sent[r] != rows[r]]
        assert stripped == model.t_pos[: len(stripped)]
        assert stubbed == model.s_pos[: len(stubbed)]
        out.append((len(stripped), len(stubbed)))
    return out


@pytest.mark.parametrize("attention", [{"policy": "reference"}, True, {"policy": "proactive"}])
def test_cost_model_reproduces_the_benchmark_scoring(attention: Any) -> None:
    """A real session's compiled requests, as a schedule over the compiler-off
    stream, cost in the model exactly what the benchmark measured."""
    fixture = Fixture("t", "t", coding_turns(7, 20))

    async def run() -> tuple[Any, Any, Any]:
        off_stream = Keep()
        await run_variant(
            fixture,
            VariantResult("off"),
            None,
            compaction=False,
            observers=[off_stream],
            model=SMALL_MODEL,
        )
        compiled = Keep()
        measured = await run_variant(
            fixture,
            VariantResult("on"),
            attention,
            compaction=False,
            observers=[compiled],
            model=SMALL_MODEL,
        )
        return off_stream, compiled, measured

    off_stream, compiled, measured = anyio.run(run)
    assert measured.error is None and sum(measured.busts) >= 1
    final = off_stream.requests[-1]
    lengths = [1 + len(r["messages"]) for r in off_stream.requests]
    model = build_model(final, lengths)
    schedule = _schedule(model, final, compiled.requests)
    cost, tokens, busts, _ = evaluate(model, schedule)
    assert tokens == measured.input_tokens
    assert busts == measured.busts
    assert cost == pytest.approx(measured.cost)
    # No schedule beats the optimum.
    assert solve(model)[0] <= cost + 1e-6
