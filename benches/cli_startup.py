"""Start-up cost of the installed command, against a bare interpreter.

Each variant is a fresh process: ``python -c pass`` (the floor every Python
command pays), ``python -c "import prism"``, and ``prism -p hi`` on the mock
provider. Bytecode caching is switched on for the measured processes (a
wheel install compiles it; a dev shell may set PYTHONDONTWRITEBYTECODE) and
one warm-up run of each writes it. Variants interleave; medians reported.

    python -m benches.cli_startup [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _variants() -> dict[str, list[str]]:
    prism = Path(sys.executable).parent / "prism"
    command = [str(prism)] if prism.exists() else [sys.executable, "-m", "prism.cli"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import prism": [sys.executable, "-c", "import prism"],
        "prism -p hi": [*command, "-p", "hi"],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(runs: int) -> dict[str, tuple[float, float]]:
    """name -> (median wall ms, median CPU ms). CPU time (user + system of
    the child) is what the process itself spent, so it holds up on a machine
    where other work competes for the cores; wall time does not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    home = tempfile.mkdtemp(prefix="prism-startup-")
    env["PRISM_HOME"] = home
    variants = _variants()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(runs + 1):  # the first round writes bytecode and is dropped
            for name, argv in variants.items():
                cpu_before = _children_cpu()
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True, capture_output=True)
                samples[name].append(time.perf_counter() - started)
                cpu[name].append(_children_cpu() - cpu_before)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {
        name: (statistics.median(samples[name][1:]) * 1000, statistics.median(cpu[name][1:]) * 1000)
        for name in variants
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    result = measure(args.runs)
    wall_floor, cpu_floor = result["python -c pass"]
    print(f"median of {args.runs} fresh processes each (wall, and CPU time of the process)")
    for name, (wall, cpu) in result.items():
        print(
            f"  {name:<16} wall {wall:7.1f} ms ({wall - wall_floor:+7.1f})"
            f"   cpu {cpu:7.1f} ms ({cpu - cpu_floor:+7.1f})"
        )


if __name__ == "__main__":
    main()
