"""``prism bench attention``: a thin launcher for benches/attention."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [([], "needs a benchmark name"), (["speed"], "unknown benchmark 'speed'")],
)
def test_bench_usage_errors(prism_run: Any, args: list[str], fragment: str) -> None:
    result = prism_run("bench", *args)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.count("\n") == 1 and fragment in err


def test_bench_help_says_what_it_measures(prism_run: Any) -> None:
    result = prism_run("bench", "--help")
    out = result.stdout.decode()
    assert result.returncode == 0 and out.startswith("usage: prism bench attention")
    assert "input tokens" in out and "attention compiler" in out and "issue" not in out.lower()


@pytest.mark.skipif(
    not (ROOT / "benches" / "attention" / "__main__.py").is_file(),
    reason="benches/attention is not in this checkout",
)
def test_bench_attention_runs_the_benchmark(prism_run: Any, tmp_path: Path) -> None:
    out = tmp_path / "results"
    # --no-plot: matplotlib is a bench extra, not installed by `make test`.
    result = prism_run(
        "bench", "attention", "--fixtures", "a", "--runs", "2", "--no-plot", "--out", str(out)
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    # It says what it measures, not which issue asked for it.
    assert b"targets (what the compiler promises" in result.stdout
    assert b"issue" not in result.stdout.lower()
    data = json.loads((out / "attention.json").read_text())
    names = [v["name"] for v in data["variants"]]
    assert names[0] == "off" and "default" in names and "optimum" in names
    assert all(
        {"totalInputTokens", "cacheBusts", "cacheAwareCost"} <= set(v) for v in data["variants"]
    )
