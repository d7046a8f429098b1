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


def measure(runs: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    home = tempfile.mkdtemp(prefix="prism-startup-")
    env["PRISM_HOME"] = home
    variants = _variants()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(runs + 1):  # the first round writes bytecode and is dropped
            for name, argv in variants.items():
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True, capture_output=True)
                samples[name].append(time.perf_counter() - started)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {name: statistics.median(values[1:]) * 1000 for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    result = measure(args.runs)
    floor = result["python -c pass"]
    print(f"median of {args.runs} fresh processes each")
    for name, millis in result.items():
        print(f"  {name:<16} {millis:7.1f} ms   {millis - floor:+7.1f} ms over python -c pass")


if __name__ == "__main__":
    main()
