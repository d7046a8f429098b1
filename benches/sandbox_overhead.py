"""Sandbox command overhead, side by side in one run (issue 28's targets).

- native: ``exec_file("true")`` in a bubblewrap sandbox against a bare
  ``anyio.run_process(["true"])`` from the same event loop (target: within
  10 ms);
- Docker: a warm container's ``exec_file("true")`` (target: under 100 ms),
  with ``docker exec <id> true`` (the CLI path the agent replaces) as the
  baseline, and create-to-ready of a container on the local image (target:
  under 1.5 s).

Variants interleave so load on the shared machine hits each alike; medians
are reported. Starts its own private dockerd (tests/docker_engine.py) and
stops it at the end.

    python -m benches.sandbox_overhead [--runs 40] [--creates 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
from tests.docker_engine import DockerEngineServer

from prism.sandbox.docker import create_docker_sandbox
from prism.sandbox.native import create_native_sandbox


async def _timed(action: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1000


async def _bare_true() -> None:
    await anyio.run_process(["true"])


async def measure(runs: int, creates: int, docker_host: str) -> dict[str, float]:
    native = await create_native_sandbox()
    docker = await create_docker_sandbox(docker_host=docker_host)
    samples: dict[str, list[float]] = {k: [] for k in ("bare", "native", "docker", "docker_cli")}
    cli = ["docker", "-H", docker_host, "exec", docker.container_id, "true"]
    try:
        for action in (
            _bare_true,
            lambda: native.exec_file("true"),
            lambda: docker.exec_file("true"),
        ):
            await action()  # warm-up
        for _ in range(runs):
            samples["bare"].append(await _timed(_bare_true))
            samples["native"].append(await _timed(lambda: native.exec_file("true")))
            samples["docker"].append(await _timed(lambda: docker.exec_file("true")))
            if len(samples["docker_cli"]) < 10:
                samples["docker_cli"].append(await _timed(lambda: anyio.run_process(cli)))
    finally:
        await native.close()
        await docker.close()
    ready: list[float] = []
    for _ in range(creates):
        started = time.perf_counter()
        sandbox = await create_docker_sandbox(docker_host=docker_host)
        ready.append((time.perf_counter() - started) * 1000)
        await sandbox.close()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    medians["docker_create_to_ready"] = statistics.median(ready)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--creates", type=int, default=5)
    options = parser.parse_args()
    engine = DockerEngineServer()
    engine.start()
    try:
        # The image import happens once per engine, before anything is timed.
        anyio.run(_warm_image, engine.host)
        medians = anyio.run(measure, options.runs, options.creates, engine.host)
    finally:
        engine.stop()
    gap = medians["native"] - medians["bare"]
    print(f"bare subprocess `true`          {medians['bare']:8.2f} ms")
    print(
        f"native exec_file `true`         {medians['native']:8.2f} ms  ({gap:+.2f} ms; target <= +10 ms)"
    )
    print(f"docker exec <id> true (CLI)     {medians['docker_cli']:8.2f} ms  (baseline)")
    print(f"docker warm exec_file `true`    {medians['docker']:8.2f} ms  (target < 100 ms)")
    print(
        f"docker create-to-ready          {medians['docker_create_to_ready']:8.2f} ms  (target < 1500 ms)"
    )


async def _warm_image(docker_host: str) -> None:
    sandbox = await create_docker_sandbox(docker_host=docker_host)
    await sandbox.close()


if __name__ == "__main__":
    main()
