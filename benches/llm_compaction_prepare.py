"""``prepare_llm_compaction`` on the 100,000-entry store fixture (issue 12).

Baselines in the same run, both a straightforward pure-Python preparation
(the same live-region scan, cut-point walk and file-operation pass, written
as plain loops) that differ only in how they estimate tokens:

- ``oracle``: the pure-Python reference of the native estimator
  (``tests/oracles/tokens.py``, the project's pure-Python version of it);
- ``json``: per content block ``len(json.dumps(...))`` / 4, which leans on
  the C JSON encoder for the escape scan.

All three must produce the same preparation; the script checks that before
timing. Times are medians of CPU time (``time.process_time``, robust on a
shared machine) and of wall time.

    python -m benches.llm_compaction_prepare [--entries 100000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import time
from typing import Any

from benches.fixtures.session import build_entries
from tests.oracles import tokens as oracle

from prism.compaction.llm import FileOperations, prepare_llm_compaction

TARGET_MS = 150.0
TARGET_RATIO = 10.0
KEEP_RECENT_TOKENS = 20_000


# --- the straightforward pure-Python preparation ---------------------------------


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _block_tokens(block: dict[str, Any]) -> int:
    kind = block["type"]
    if kind in ("text", "thinking"):
        chars = len(block["text"])
    elif kind == "image":
        return 1000
    elif kind == "tool_call":
        chars = len(block["name"]) + _chars(block["arguments"])
    elif kind == "tool_result":
        chars = len(block["name"]) + _chars(block["result"])
    else:
        chars = _chars(block)
    return math.ceil(chars / 4)


def _entry_tokens(entry: dict[str, Any]) -> int:
    kind = entry["kind"]
    if kind == "message":
        return 4 + sum(_block_tokens(b) for b in entry["message"]["content"])
    if kind in ("summary", "compaction"):
        return math.ceil(len(entry["summary"]) / 4) + 4
    return 4


def _cut_point(role: str | None) -> bool:
    return role in ("user", "assistant")


def python_prepare(
    entries: list[dict[str, Any]], keep: int, estimate: Any = _entry_tokens
) -> dict[str, Any]:
    previous = None
    live = entries
    for index in range(len(entries) - 1, -1, -1):
        if entries[index]["kind"] == "compaction":
            previous = entries[index]
            kept = set(previous["data"]["keepEntryIds"])
            live = [e for e in entries[:index] if e["id"] in kept] + entries[index + 1 :]
            break
    counts = [estimate(e) for e in live]
    roles = [e["message"]["role"] if e["kind"] == "message" else None for e in live]
    total, crossing = 0, -1
    for index in range(len(live) - 1, -1, -1):
        total += counts[index]
        if total >= keep:
            crossing = index
            break
    if crossing < 0:
        cut = 0
    else:
        after = [i for i in range(crossing, len(live)) if _cut_point(roles[i])]
        before = [i for i in range(crossing) if _cut_point(roles[i])]
        cut = after[0] if after else (before[-1] if before else 0)
    turn_start = -1
    if 0 < cut < len(live) and roles[cut] != "user":
        starts = [i for i in range(cut) if roles[i] == "user"]
        turn_start = starts[-1] if starts else -1
    ops = FileOperations()
    for entry in live[:cut]:
        if entry["kind"] == "message" and entry["message"]["role"] == "assistant":
            for block in entry["message"]["content"]:
                if block["type"] == "tool_call":
                    ops.add_call(block["name"], block["arguments"])
    before_tokens = sum(counts) + (estimate(previous) if previous else 0)
    return {
        "first_kept": live[cut]["id"] if cut < len(live) else None,
        "turn_start": turn_start,
        "before": before_tokens,
        "kept": sum(counts[cut:]),
        "read": ops.read_files,
        "modified": ops.modified_files,
    }


def native_prepare(entries: list[dict[str, Any]], keep: int) -> dict[str, Any]:
    prep = prepare_llm_compaction(entries, keep_recent_tokens=keep)  # type: ignore[arg-type]
    ops = prep.file_operations
    assert ops is not None
    turn_start = len(prep.history_entries) if prep.is_split_turn else -1
    return {
        "first_kept": prep.first_kept_entry_id,
        "turn_start": turn_start,
        "before": prep.estimated_tokens_before,
        "kept": prep.kept_tokens,
        "read": ops.read_files,
        "modified": ops.modified_files,
    }


def oracle_prepare(entries: list[dict[str, Any]], keep: int) -> dict[str, Any]:
    return python_prepare(entries, keep, oracle.estimate_entry_tokens)


def _time(fn: Any, entries: list[dict[str, Any]], repeat: int) -> tuple[float, float]:
    cpu, wall = [], []
    for _ in range(repeat):
        gc.collect()
        start_cpu, start = time.process_time(), time.perf_counter()
        fn(entries, KEEP_RECENT_TOKENS)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    entries = build_entries(args.entries)
    expected = native_prepare(entries, KEEP_RECENT_TOKENS)
    for baseline in (python_prepare, oracle_prepare):
        assert baseline(entries, KEEP_RECENT_TOKENS) == expected, baseline.__name__
    slow = max(3, args.repeat // 2)
    native = _time(native_prepare, entries, args.repeat)
    rows = [
        ("prepare_llm_compaction (native estimates)", native),
        ("pure Python, oracle estimator", _time(oracle_prepare, entries, slow)),
        ("pure Python, json.dumps estimator", _time(python_prepare, entries, slow)),
    ]
    print(f"entries: {args.entries}, keep_recent_tokens: {KEEP_RECENT_TOKENS}")
    print(f"{'variant':45s} {'cpu ms':>9s} {'wall ms':>9s} {'ratio (cpu)':>12s}")
    for name, (cpu, wall) in rows:
        print(f"{name:45s} {cpu:9.1f} {wall:9.1f} {cpu / native[0]:11.1f}x")
    print(f"targets: <= {TARGET_MS:.0f} ms and >= {TARGET_RATIO:.0f}x the straightforward version")


if __name__ == "__main__":
    main()
