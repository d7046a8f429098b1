"""Token estimate error against exact o200k_base counts, plain vs calibrated.

Fixture: the seeded JSON-heavy coding session of benches/fixtures/session.py
(user asks, the model thinks and calls a tool, 1-40 KB results: source,
logs, JSON listings), sent as a growing request twice per run (after the
user's message, after the tool result), with a compaction half-way that
replaces the history by a prose summary and the last two runs (the mix
changes at once).

Ground truth: what the provider bills, counted exactly with tiktoken-rs
(o200k_base, embedded in the crate, nothing downloaded): every text,
thinking, tool name, compact-JSON argument and result, the tool declarations,
plus 4 tokens per message. It runs in the benchmark-only binary
``benches/tokcount`` (built on first use with cargo into /tmp).

Reported: the plain estimate's error (ceil(chars/4) per block + 4 per
message, Prism's budget rule) over all requests; the calibrated estimate's
error from the fourth request on (the calibration has seen three); the
calibration's cost per turn (observe + estimate) and the cost of splitting
a request by kind; and what shipping exact counts would cost: the binary
size with and without tiktoken-rs (raw and zip-compressed, as in a wheel)
and its encode speed next to the chars/4 estimate's.

    python -m benches.token_calibration [--runs 60] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

from benches.fixtures.session import iter_messages

from prism import _native
from prism.attention.calibration import TokenCalibration, split_request_tokens

HERE = Path(__file__).parent
TARGET = Path(os.environ.get("PRISM_TOKCOUNT_TARGET", "/tmp/tokcount-target"))
BINARY = TARGET / "release" / "prism-tokcount"
EMPTY = TARGET / "release" / "prism-tokcount-empty"
TOOLS = [
    {
        "name": name,
        "description": f"{name} tool",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("read_file", "grep", "edit_file", "run_command", "list_dir")
]


def build_binaries() -> None:
    for crate in ("tokcount", "tokcount_empty"):
        subprocess.run(
            ["cargo", "build", "--release", "--quiet"],
            cwd=HERE / crate,
            env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)},
            check=True,
        )


def exact_counts(texts: list[str]) -> dict[str, int]:
    unique = sorted(set(texts))
    payload = "".join(json.dumps(t) + "\n" for t in unique)
    out = subprocess.run([str(BINARY)], input=payload, capture_output=True, text=True, check=True)
    return dict(zip(unique, (int(n) for n in out.stdout.split()), strict=True))


def compact(value: Any) -> str:
    return (
        value
        if isinstance(value, str)
        else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    )


def block_texts(block: dict[str, Any]) -> list[str]:
    kind = block["type"]
    if kind in ("text", "thinking"):
        return [block["text"]]
    if kind == "tool_call":
        return [block["name"], compact(block["arguments"])]
    if kind == "tool_result":
        return [block["name"], compact(block["result"])]
    return [compact(block)]


def requests(runs: int, seed: int) -> list[dict[str, Any]]:
    """The growing requests of the session, with one compaction half-way."""
    messages = list(iter_messages(seed, runs))
    system = {
        "role": "system",
        "content": [{"type": "text", "text": "You are a careful coding agent."}],
    }
    out: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = [system]
    for run in range(runs):
        user, call, result, answer = messages[4 * run : 4 * run + 4]
        if run == runs // 2:
            summary = " ".join(
                b["text"] for m in history for b in m["content"] if b["type"] == "text"
            )[:12_000]
            tail = history[-8:]
            history = [
                system,
                {"role": "user", "content": [{"type": "text", "text": "Summary: " + summary}]},
                *tail,
            ]
        history.append(user)
        out.append(
            {
                "model": {"provider": "bench", "model": "o200k"},
                "messages": list(history),
                "tools": TOOLS,
            }
        )
        history.extend([call, result])
        out.append(
            {
                "model": {"provider": "bench", "model": "o200k"},
                "messages": list(history),
                "tools": TOOLS,
            }
        )
        history.append(answer)
    return out


def truth(request: dict[str, Any], counts: dict[str, int]) -> int:
    total = counts[compact(request["tools"])]
    for message in request["messages"]:
        total += 4 + sum(counts[t] for b in message["content"] for t in block_texts(b))
    return total


def plain(request: dict[str, Any]) -> int:
    return sum(
        _native.estimate_message_tokens(m) for m in request["messages"]
    ) + _native.estimate_value_tokens(request["tools"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def calibration_cost(splits: list[Any], reported: list[int], rounds: int = 200) -> float:
    """Microseconds per turn for observe + estimate (the split is measured apart)."""
    started = time.perf_counter()
    for _ in range(rounds):
        calibration = TokenCalibration()
        for split, billed in zip(splits, reported, strict=True):
            calibration.estimate("m", split)
            calibration.observe("m", split, billed)
    return (time.perf_counter() - started) / (rounds * len(splits)) * 1e6


def call_cost(rounds: int = 200_000) -> float:
    """Microseconds of one empty Python function call: the machine's speed
    in the same run (a quiet core: about 0.05)."""

    def noop() -> None:
        return None

    started = time.perf_counter()
    for _ in range(rounds):
        noop()
    return (time.perf_counter() - started) / rounds * 1e6


def split_cost(reqs: list[dict[str, Any]], session: str | None = None) -> float:
    """Microseconds per request to split by kind, incrementally (a session
    sends the same message objects again, so only new rows are measured).
    With ``session`` the requests carry ``metadata.sessionId``, so each one
    reuses the previous request's running sums over their common prefix."""
    if session is not None:
        reqs = [{**r, "metadata": {"sessionId": session}} for r in reqs]
    started = time.perf_counter()
    for request in reqs:
        split_request_tokens(request)
    return (time.perf_counter() - started) / len(reqs) * 1e6


def split_repeat_cost(reqs: list[dict[str, Any]], session: str | None = None) -> float:
    """As :func:`split_cost`, but every row was measured before (a second
    pass over the same requests): what a turn pays beyond measuring its new
    rows once."""
    split_cost(reqs, session)
    return split_cost(reqs, None if session is None else session + "-again")


def split_costs(runs: int, seed: int, repeats: int = 5) -> dict[str, Any]:
    """Per-message memo only vs session prefix reuse, alternated, each on
    fresh message objects (so every row is measured once, as in a session)."""
    memo, prefix, memo_again, prefix_again, calls = [], [], [], [], []
    for i in range(repeats):
        memo.append(split_cost(requests(runs, seed)))
        prefix.append(split_cost(requests(runs, seed), session=f"bench-{i}"))
        memo_again.append(split_repeat_cost(requests(runs, seed)))
        prefix_again.append(split_repeat_cost(requests(runs, seed), session=f"again-{i}"))
        calls.append(call_cost(50_000))
    mid = len(calls) // 2
    return {
        "splitSeenRowsMicrosPerRequest": sorted(round(m, 1) for m in memo_again),
        "splitSeenRowsWithSessionMicrosPerRequest": sorted(round(m, 1) for m in prefix_again),
        "splitMicrosPerRequest": sorted(round(m, 1) for m in memo),
        "splitWithSessionMicrosPerRequest": sorted(round(m, 1) for m in prefix),
        "splitEmptyCallMicros": sorted(round(c, 3) for c in calls),
        "splitQuietCoreMicrosMedian": round(sorted(memo)[mid] / sorted(calls)[mid] * 0.05, 1),
        "splitWithSessionQuietCoreMicrosMedian": round(
            sorted(prefix)[mid] / sorted(calls)[mid] * 0.05, 1
        ),
    }


def cost_ratio(reqs: list[dict[str, Any]], repeats: int = 9) -> dict[str, Any]:
    """The calibration's cost per turn (estimate + observe) against an empty
    Python call measured alternately in the same run: a ratio that holds on
    a loaded machine, and its equivalent on a quiet core (0.05 us a call)."""
    splits = [split_request_tokens(r) for r in reqs]
    reported = [round(s.total * 1.1) for s in splits]
    ratios, micros, calls = [], [], []
    for _ in range(repeats):
        turn, call = calibration_cost(splits, reported, rounds=50), call_cost(50_000)
        micros.append(turn)
        calls.append(call)
        ratios.append(turn / call)
    middle = sorted(ratios)[len(ratios) // 2]
    return {
        "calibrationMicrosPerTurn": [round(m, 2) for m in micros],
        "emptyCallMicros": [round(c, 3) for c in calls],
        "callsPerTurn": [round(r, 1) for r in ratios],
        "quietCoreMicrosPerTurnMedian": round(middle * 0.05, 2),
    }


def size_and_speed(texts: list[str]) -> dict[str, Any]:
    def sizes(path: Path) -> tuple[int, int]:
        raw = path.read_bytes()
        return len(raw), len(zlib.compress(raw, 9))

    with_raw, with_zip = sizes(BINARY)
    without_raw, without_zip = sizes(EMPTY)
    payload = "".join(json.dumps(t) + "\n" for t in texts)
    out = subprocess.run(
        [str(BINARY), "--bench"], input=payload, capture_output=True, text=True, check=True
    )
    bench = json.loads(out.stdout)
    started = time.perf_counter()
    for text in texts:
        _native.estimate_text_tokens(text)
    estimate_s = time.perf_counter() - started
    return {
        "binaryBytesWithTiktoken": with_raw,
        "binaryBytesWithout": without_raw,
        "addedBytes": with_raw - without_raw,
        "addedBytesCompressed": with_zip - without_zip,
        "exactMBPerSecond": round(bench["bytes"] / bench["seconds"] / 1e6, 1),
        "estimateMBPerSecond": round(bench["bytes"] / estimate_s / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cost-only",
        action="store_true",
        help="only the calibration's cost per turn, as a ratio to an empty call "
        "(no exact-count binary needed)",
    )
    args = parser.parse_args()
    if args.cost_only:
        costs = {
            **cost_ratio(requests(args.runs, args.seed)),
            **split_costs(args.runs, args.seed),
        }
        print(json.dumps(costs, indent=2))
        return
    if not BINARY.exists() or not EMPTY.exists():
        build_binaries()
    reqs = requests(args.runs, args.seed)
    texts = [compact(TOOLS)] + [
        t for r in reqs for m in r["messages"] for b in m["content"] for t in block_texts(b)
    ]
    counts = exact_counts(texts)
    truths = [truth(r, counts) for r in reqs]
    plains = [plain(r) for r in reqs]
    splits = [split_request_tokens(r) for r in reqs]
    plain_errors = [abs(p - t) / t for p, t in zip(plains, truths, strict=True)]
    calibration = TokenCalibration()
    calibrated_errors = []
    for i, (split, billed) in enumerate(zip(splits, truths, strict=True)):
        if i >= 3:
            calibrated_errors.append(abs(calibration.estimate("m", split) - billed) / billed)
        calibration.observe("m", split, billed)
    compaction_at = args.runs  # request index right after the compaction
    result = {
        "requests": len(reqs),
        "plainMeanSignedError": round(
            sum((p - t) / t for p, t in zip(plains, truths, strict=True)) / len(reqs), 4
        ),
        "plainP50": round(percentile(plain_errors, 0.5), 4),
        "plainP95": round(percentile(plain_errors, 0.95), 4),
        "calibratedP50": round(percentile(calibrated_errors, 0.5), 4),
        "calibratedP95": round(percentile(calibrated_errors, 0.95), 4),
        "calibratedMax": round(max(calibrated_errors), 4),
        "calibratedAtCompaction": round(calibrated_errors[compaction_at - 3], 4),
        "ratios": calibration.ratios("m"),
        "calibrationMicrosPerTurn": round(calibration_cost(splits, truths), 2),
        "emptyCallMicros": round(call_cost(), 3),
        "splitMicrosPerRequest": round(split_cost(requests(args.runs, args.seed)), 1),
        **size_and_speed(list(counts)),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
