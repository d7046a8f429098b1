"""Parsing a 100k-entry (~100 MB) session file: native parse + validation vs
orjson per line + the same validation in Python. Peak memory of each is
measured in a fresh subprocess (VmHWM: the child's own high-water mark;
ru_maxrss would include the parent's RSS inherited across fork), since
tracemalloc cannot see Rust-side allocations."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from benches.fixtures.session import write_session_file
from tests.oracles.jsonl import Invalid, validate_entry

from prism import _native as native

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def session_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("native-parse") / "session.jsonl"
    write_session_file(str(path), 100_000)
    return path


def orjson_read(path: Path) -> tuple[list[Any], list[Any]]:
    entries: list[Any] = []
    errors: list[Any] = []
    with open(path, "rb") as f:
        data = f.read()
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
            validate_entry(value)
        except (orjson.JSONDecodeError, Invalid) as exc:
            errors.append(
                {"line": number, "reason": str(exc), "raw": line.decode(errors="replace")}
            )
            continue
        entries.append(value)
    return entries, errors


def orjson_read_gc_paused(path: Path) -> tuple[list[Any], list[Any]]:
    gc.disable()
    try:
        return orjson_read(path)
    finally:
        gc.enable()


def test_same_entries(session_file: Path) -> None:
    native_entries, native_errors = native.read_session_entries(session_file)
    entries, errors = orjson_read(session_file)
    assert len(native_entries) == 100_000 and native_errors == errors == []
    assert native_entries[::997] == entries[::997]


@pytest.mark.benchmark(group="parse-100k-entries")
def test_parse_native(benchmark: Any, session_file: Path) -> None:
    benchmark.pedantic(native.read_session_entries, (session_file,), rounds=5, iterations=1)


@pytest.mark.benchmark(group="parse-100k-entries")
def test_parse_orjson_loop(benchmark: Any, session_file: Path) -> None:
    benchmark.pedantic(orjson_read, (session_file,), rounds=5, iterations=1)


@pytest.mark.benchmark(group="parse-100k-entries")
def test_parse_orjson_loop_gc_paused(benchmark: Any, session_file: Path) -> None:
    benchmark.pedantic(orjson_read_gc_paused, (session_file,), rounds=5, iterations=1)


_PEAK = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from benches.test_native_parse import orjson_read
from prism import _native
path = Path({path!r})
entries, errors = {call}(path)
assert len(entries) == 100_000
status = open("/proc/self/status").read()
print(int(status.split("VmHWM:")[1].split()[0]))
"""


def peak_rss_mb(path: Path, call: str) -> float:
    code = _PEAK.format(root=str(ROOT), path=str(path), call=call)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


@pytest.mark.benchmark(group="parse-100k-peak-memory")
def test_parse_peak_memory(benchmark: Any, session_file: Path) -> None:
    size_mb = session_file.stat().st_size / 1e6
    result: dict[str, float] = {}

    def measure() -> None:
        result["native_peak_mb"] = peak_rss_mb(session_file, "_native.read_session_entries")
        result["orjson_peak_mb"] = peak_rss_mb(session_file, "orjson_read")
        result["import_only_mb"] = peak_rss_mb(session_file, "(lambda p: ([0] * 100_000, []))")

    benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update(result, file_mb=round(size_mb, 1))
    print("\npeak RSS MB:", json.dumps(result), f"file {size_mb:.1f} MB")
