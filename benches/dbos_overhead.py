"""What running on DBOS costs per turn (issue 16): the benchmark scenario
(prompt -> tool call -> 2 KB result -> answer) on an SQLite session store,
as a plain run, a durable run, and a run as a DBOS workflow on an SQLite
system database, alternating so all three see the same machine load.

A DBOS run records the workflow, each provider turn and the tool call in
the system database (each a committed SQLite transaction) on top of the
durable run's store writes; this measures that price. There is no target:
the number is for deciding when a run is worth a workflow.

    python -m benches.dbos_overhead [--turns N]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from benches.runtime_overhead import _prism_agent


async def measure(turns: int, home: Path) -> dict[str, dict[str, float]]:
    from dbos import DBOS

    from prism.durable.dbos import DBOSAgent
    from prism.stores import create_sqlite_session_store

    plain = _prism_agent(create_sqlite_session_store(home / "plain.sqlite"))
    durable = _prism_agent(create_sqlite_session_store(home / "durable.sqlite"), durable=True)
    on_dbos = DBOSAgent(
        _prism_agent(create_sqlite_session_store(home / "dbos.sqlite")), name="bench"
    )
    DBOS(
        config={
            "name": "prism-bench",
            "system_database_url": f"sqlite:///{home / 'system.sqlite'}",
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        runs = {
            "plain": lambda n: plain.create_session("bench").run(f"prompt {n}"),
            "durable": lambda n: durable.create_session("bench").run(f"prompt {n}"),
            "DBOS workflow": lambda n: on_dbos.run("bench", f"prompt {n}"),
        }
        names = list(runs)
        for n in range(20):  # warm up
            for name in names:
                await runs[name](-n)
        timings: dict[str, list[float]] = {name: [] for name in names}
        for n in range(turns):
            for name in names[n % 3 :] + names[: n % 3]:
                gc.collect(0)
                start = time.perf_counter()
                await runs[name](n)
                timings[name].append((time.perf_counter() - start) * 1000)
    finally:
        DBOS.destroy()
    plain_median = statistics.median(timings["plain"])
    return {
        name: {
            "min_ms": round(min(values), 3),
            "median_ms": round(statistics.median(values), 3),
            "median_ratio": round(statistics.median(values) / plain_median, 2),
        }
        for name, values in timings.items()
    }


def render(result: dict[str, dict[str, float]], turns: int) -> str:
    lines = [
        f"per-turn wall time, SQLite session store, {turns} turns each",
        "| run | min ms | median ms | median / plain |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, row in result.items():
        lines.append(f"| {name} | {row['min_ms']} | {row['median_ms']} | {row['median_ratio']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result: Any = anyio.run(measure, args.turns, Path(tmp))
    print(render(result, args.turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
