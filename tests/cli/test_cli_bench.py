"""``prism bench attention``: Prism's attention scenario from the package (no
source tree needed), its JSON document, its usage errors, and the full
benchmark still running from the source tree as ``python -m benches.attention``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from prism._bench.attention.runner import VARIANTS, run_scenario

ROOT = Path(__file__).resolve().parents[2]
VARIANT_KEYS = {
    "name",
    "description",
    "turns",
    "requests",
    "inputTokens",
    "peakInputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "cacheReadShare",
    "cost",
    "costVsOff",
    "turnCost",
    "cacheBusts",
    "gateTrips",
    "compactions",
    "requestsOverWindow",
    "error",
}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "bench needs a benchmark name"),
        (["speed"], "unknown benchmark 'speed'"),
        (["attention", "--turns", "-1"], "--turns: must be between 1 and 1000, got -1"),
        (["attention", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bench_usage_errors(prism_run: Any, args: list[str], fragment: str) -> None:
    result = prism_run("bench", *args)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.count("\n") == 1 and fragment in err, err
    assert result.stdout == b""


def test_bench_help_says_what_it_measures(prism_run: Any) -> None:
    result = prism_run("bench", "--help")
    out = result.stdout.decode()
    assert result.returncode == 0 and out.startswith("usage: prism bench attention")
    for words in ("--turns", "--seed", "--json", "input tokens", "attention compiler"):
        assert words in out
    assert "issue" not in out.lower()


def test_bench_attention_json_is_the_seeded_scenario(prism_run: Any) -> None:
    result = prism_run("bench", "attention", "--turns", "2", "--seed", "7", "--json")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    doc = json.loads(result.stdout)
    assert doc["benchmark"] == "attention" and doc["turns"] == 2 and doc["seed"] == 7
    assert doc["pricing"] == {"cacheRead": 0.1, "cacheWrite": 1.25, "unit": "base input tokens"}
    assert [v["name"] for v in doc["variants"]] == [v.name for v in VARIANTS]
    for variant in doc["variants"]:
        assert set(variant) == VARIANT_KEYS
        assert variant["turns"] == 2 and variant["requests"] == 4 and variant["error"] is None
        assert set(variant["turnCost"]) == {"p50", "p95", "max"}
    assert "issue" not in result.stdout.decode().lower()
    # Deterministic for a seed: another process computes the same document,
    # and another seed a different session.
    assert anyio.run(run_scenario, 2, 7) == doc
    assert anyio.run(run_scenario, 2, 8)["variants"] != doc["variants"]


def test_benches_attention_still_runs_with_the_peers_and_the_optimum(tmp_path: Path) -> None:
    out = tmp_path / "results"
    # --no-plot: matplotlib is a bench extra, not installed by `make test`.
    args = ["--fixtures", "a", "--runs", "2", "--no-plot", "--out", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "benches.attention", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"targets (what the compiler promises" in result.stdout
    assert b"issue" not in result.stdout.lower()
    data = json.loads((out / "attention.json").read_text())
    names = [v["name"] for v in data["variants"]]
    assert names[0] == "off" and "default" in names and "optimum" in names
    assert "openai trim" in names and "anthropic edit" in names
    assert all(
        {"totalInputTokens", "cacheBusts", "cacheAwareCost"} <= set(v) for v in data["variants"]
    )
