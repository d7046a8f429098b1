"""Does the eval runner keep N cases busy (issue 30)? Throughput of a suite
of cases against a mock agent whose every provider turn waits like a model
does (``--delay-ms`` per streamed event, three events a turn), at
concurrency 1, 2, 4, 8 and 16, as cases per second and as a ratio to
concurrency 1 measured in the same run. Sessions go to a SQLite store, as
with ``prism eval run``. Target: the ratio grows with concurrency.

With ``--delay-ms 0`` the agent does no waiting at all, so a case is pure
CPU on one event loop: that row shows the runner's own ceiling.

    python -m benches.eval_throughput [--cases 64] [--delay-ms 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from prism import create_agent, create_mock_provider, create_sqlite_session_store
from prism.evals import Case, Contains, run_eval
from prism.providers import provider_done, provider_text_delta

LEVELS = (1, 2, 4, 8, 16)


def _agent(delay_ms: float) -> Any:
    script = [provider_text_delta("the "), provider_text_delta("answer"), provider_done()]
    return create_agent(
        model={"provider": "mock", "model": "bench"},
        provider=create_mock_provider(script, delay_ms=delay_ms),
    )


async def _throughput(cases: list[Case], delay_ms: float, concurrency: int, home: Path) -> float:
    store = create_sqlite_session_store(home / f"c{concurrency}-{time.monotonic_ns()}.sqlite")
    started = time.perf_counter()
    report = await run_eval(
        cases, _agent(delay_ms), evaluators=[Contains("answer")], concurrency=concurrency,
        store=store, progress=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    assert report.pass_rate == 1.0, report.counts()
    return len(cases) / elapsed


async def measure(n_cases: int, delay_ms: float, rounds: int) -> dict[int, float]:
    """Median cases/s per concurrency level, levels interleaved per round so
    they all see the same machine load."""
    cases = [Case(f"case-{i}", f"question {i}") for i in range(n_cases)]
    samples: dict[int, list[float]] = {level: [] for level in LEVELS}
    with tempfile.TemporaryDirectory() as home:
        for _ in range(rounds):
            for level in LEVELS:
                samples[level].append(await _throughput(cases, delay_ms, level, Path(home)))
    return {level: statistics.median(values) for level, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = anyio.run(measure, args.cases, args.delay_ms, args.rounds)
    base = results[1]
    print(f"{args.cases} cases, mock delay {args.delay_ms} ms/event, median of {args.rounds}")
    print("concurrency  cases/s  ratio vs 1")
    for level, rate in results.items():
        print(f"{level:>11}  {rate:7.1f}  {rate / base:9.2f}x")


if __name__ == "__main__":
    main()
