"""The coding tools against their baselines, side by side in one run (issue 27).

- search: the ``search`` tool (dispatch included) and the native call alone,
  against the ``rg`` binary (ripgrep, same pattern, same tree, process
  start included as a user pays it) and an ``os.walk`` + ``re`` baseline
  that reads every file and skips binary ones. Tree: a Python installation's
  site-packages (tens of thousands of files). Caps are lifted so every tool
  reports every match.
- read/edit of a 5 MB file: the tool call (dispatch, policy, roots check,
  stale-read guard, decode, numbering or replace + atomic write, event)
  minus the bare operation (``read_bytes``; read + replace + write).
- shell: the ``shell`` tool running ``true`` against ``subprocess.run(["true"])``.

Times are medians over ``--repeat`` runs after one warm-up, of wall time or,
with ``--cpu``, of CPU time (this process's threads plus its children).

    python -m benches.coding_tools [--tree PATH] [--repeat 7] [--cpu]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from prism import _native
from prism.coding import CodingLimits, create_coding_tools
from prism.security import NOOP_REDACTOR, allow_command, allow_kinds, create_execution_policy
from prism.tools import ToolContext, create_tool_registry, dispatch_tool_call

PATTERN = r"def \w+_callback\("
BIG = 10**9


CLOCK = time.perf_counter


def cpu_clock() -> float:
    """CPU seconds of this process (all threads) plus its reaped children
    (``rg``, the shell's commands): the work done, which a loaded machine
    distorts far less than wall time."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        samples.append((CLOCK() - start) * 1000)
    return statistics.median(samples)


async def amedian_ms(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    await fn()
    samples = []
    for _ in range(repeat):
        start = CLOCK()
        await fn()
        samples.append((CLOCK() - start) * 1000)
    return statistics.median(samples)


def walk_re(root: str) -> int:
    """The straightforward baseline: every file read and matched line by line."""
    regex = re.compile(PATTERN.encode())
    hits = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            for line in data.split(b"\n"):
                if regex.search(line):
                    hits += 1
    return hits


def rg(root: str) -> int:
    done = subprocess.run(
        ["rg", "-n", "--no-heading", "-e", PATTERN, root], capture_output=True, check=False
    )
    return done.stdout.count(b"\n")


def native(root: str) -> int:
    found = _native.search_files(root, PATTERN, max_per_file=BIG, max_total=BIG, max_filesize=BIG)
    return found["total_matches"]


def count_files(root: str) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def caller(tools: Any) -> Callable[..., Awaitable[Any]]:
    registry = create_tool_registry(list(tools))
    context = ToolContext(session_id="bench", run_id="bench")

    async def call(tool: str, **arguments: Any) -> Any:
        result = await dispatch_tool_call(
            {"id": "b", "name": tool, "arguments": arguments},
            registry=registry,
            context=context,
            redactor=NOOP_REDACTOR,
        )
        if result.get("isError"):
            raise RuntimeError(result["value"])
        return result["value"]

    return call


async def bench_search(tree: str, repeat: int) -> dict[str, float]:
    if shutil.which("rg") is None:
        raise SystemExit("rg is not installed; run .ci/install-coding-tools")
    counts = {"rg": rg(tree), "native": native(tree), "walk": walk_re(tree)}
    limits = CodingLimits(search_max_per_file=BIG, search_max_total=BIG, max_file_bytes=BIG)
    call = caller(create_coding_tools(tree, limits=limits, redactor=NOOP_REDACTOR))
    tool_ms = await amedian_ms(lambda: call("search", pattern=PATTERN, hidden=False), repeat)
    out = {
        "files": float(count_files(tree)),
        "matches_rg": float(counts["rg"]),
        "matches_native": float(counts["native"]),
        "matches_walk": float(counts["walk"]),
        "rg_ms": median_ms(lambda: rg(tree), repeat),
        "native_ms": median_ms(lambda: native(tree), repeat),
        "tool_ms": tool_ms,
        "walk_ms": median_ms(lambda: walk_re(tree), max(3, repeat // 2)),
    }
    return out


async def bench_files(repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        line = "    value = compute(alpha, beta, gamma)  # a line of ordinary code\n"
        body = line * (5_000_000 // len(line))
        target = root / "big.py"
        target.write_text(body[: len(body) // 2] + "MARKER_ONE\n" + body[len(body) // 2 :])
        policy = create_execution_policy(
            [root], [allow_kinds("edit", "write")], redactor=NOOP_REDACTOR
        )
        call = caller(create_coding_tools(root, execution_policy=policy, redactor=NOOP_REDACTOR))
        read_ms = await amedian_ms(lambda: call("read", path="big.py"), repeat)
        bare_read = median_ms(target.read_bytes, repeat)
        state = {"flip": False}

        async def edit() -> None:
            old, new = (
                ("MARKER_ONE", "MARKER_TWO") if not state["flip"] else ("MARKER_TWO", "MARKER_ONE")
            )
            state["flip"] = not state["flip"]
            await call("edit", path="big.py", old_string=old, new_string=new)

        edit_ms = await amedian_ms(edit, repeat)
        bare = {"flip": False}

        def bare_edit() -> None:
            old, new = (
                ("MARKER_ONE", "MARKER_TWO") if not bare["flip"] else ("MARKER_TWO", "MARKER_ONE")
            )
            bare["flip"] = not bare["flip"]
            text = target.read_text()
            target.write_text(text.replace(old, new, 1))

        def bare_atomic_edit() -> None:
            # the same edit written as the tool writes: temp file, fsync, rename, fsync dir
            old, new = (
                ("MARKER_ONE", "MARKER_TWO") if not bare["flip"] else ("MARKER_TWO", "MARKER_ONE")
            )
            bare["flip"] = not bare["flip"]
            data = target.read_text().replace(old, new, 1).encode()
            temp = target.with_suffix(".tmp")
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
            fd = os.open(root, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)

        # the tool's edit left the marker as MARKER_ONE or TWO; align the bare loop
        bare["flip"] = "MARKER_TWO" in target.read_text()
        bare_edit_ms = median_ms(bare_edit, repeat)
        bare["flip"] = "MARKER_TWO" in target.read_text()
        bare_atomic_ms = median_ms(bare_atomic_edit, repeat)
        return {
            "size_mb": target.stat().st_size / 1e6,
            "read_ms": read_ms,
            "bare_read_ms": bare_read,
            "edit_ms": edit_ms,
            "bare_edit_ms": bare_edit_ms,
            "bare_atomic_ms": bare_atomic_ms,
        }


async def bench_shell(repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        policy = create_execution_policy([tmp], [allow_command("true")], redactor=NOOP_REDACTOR)
        call = caller(create_coding_tools(tmp, execution_policy=policy, redactor=NOOP_REDACTOR))
        tool_ms = await amedian_ms(lambda: call("shell", argv=["true"]), repeat)
        bare_ms = median_ms(
            lambda: subprocess.run(["true"], cwd=tmp, env={"PATH": "/usr/bin:/bin"}, check=True),
            repeat,
        )
        return {"tool_ms": tool_ms, "bare_ms": bare_ms}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", default=sysconfig.get_paths()["purelib"])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time by CPU (this process's threads plus its children) instead of wall time",
    )
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, tree {args.tree}")

    global CLOCK
    if args.cpu:
        CLOCK = cpu_clock
    clock = "CPU" if args.cpu else "wall"
    s = await bench_search(args.tree, args.repeat)
    print(
        f"search: {int(s['files'])} files; matches rg {int(s['matches_rg'])}, native "
        f"{int(s['matches_native'])}, walk+re {int(s['matches_walk'])}"
    )
    print(f"  ({clock} time)")
    print(f"  rg binary        {s['rg_ms']:8.1f} ms")
    print(f"  native call      {s['native_ms']:8.1f} ms  ({s['native_ms'] / s['rg_ms']:.2f}x rg)")
    print(
        f"  search tool      {s['tool_ms']:8.1f} ms  ({s['tool_ms'] / s['rg_ms']:.2f}x rg, target <= 1.5x)"
    )
    print(
        f"  os.walk + re     {s['walk_ms']:8.1f} ms  (tool is {s['walk_ms'] / s['tool_ms']:.1f}x faster, target >= 10x)"
    )

    f = await bench_files(args.repeat)
    print(f"read/edit of a {f['size_mb']:.1f} MB file ({clock} time):")
    print(
        f"  read tool {f['read_ms']:.1f} ms, bare read {f['bare_read_ms']:.1f} ms, overhead {f['read_ms'] - f['bare_read_ms']:.1f} ms (target < 30)"
    )
    print(
        f"  edit tool {f['edit_ms']:.1f} ms, bare edit {f['bare_edit_ms']:.1f} ms "
        f"(overhead {f['edit_ms'] - f['bare_edit_ms']:.1f} ms); bare edit written atomically "
        f"with fsync {f['bare_atomic_ms']:.1f} ms (overhead {f['edit_ms'] - f['bare_atomic_ms']:.1f} ms; "
        "target < 30)"
    )

    sh = await bench_shell(max(args.repeat, 30))
    print(
        f"shell ({clock} time): tool {sh['tool_ms']:.2f} ms, bare subprocess {sh['bare_ms']:.2f} ms, overhead {sh['tool_ms'] - sh['bare_ms']:.2f} ms (target < 5)"
    )


if __name__ == "__main__":
    anyio.run(main)
