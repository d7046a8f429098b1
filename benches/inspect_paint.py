"""The inspector's targets, measured in headless Chromium (docs/performance.md):

* first paint of a 100,000-entry session (navigation start to the page
  showing the session: list, tree, last page of messages), against a
  100-entry session in the same run;
* live-tail latency: an entry appended by another store instance, to the
  moment the page has rendered it;
* the server's resident memory, idle after start and after serving.

Run: ``python -m benches.inspect_paint [--entries 100000] [--samples 5]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from selenium.webdriver.common.by import By
from tests.inspect.browser import InspectorProcess, make_driver, wait_for

from prism.stores import create_jsonl_session_store


def write_session(path: Path, entries: int, session: str = "long") -> str:
    """A linear session of tool rounds with a compaction every 10,000 entries."""
    parent: str | None = None
    with path.open("w", encoding="utf-8") as handle:
        for n in range(entries):
            entry_id = f"e{n}"
            phase = n % 4
            if n and n % 10_000 == 0:
                entry: dict[str, Any] = {
                    "kind": "compaction",
                    "summary": f"Summary of the first {n} entries. " * 4,
                    "data": {"throughEntryId": parent, "keepEntryIds": [], "trigger": "auto"},
                }
            elif phase == 0:
                entry = {
                    "kind": "message",
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": f"Step {n}: check the logs and report. " * 3}
                        ],
                    },
                }
            elif phase == 1:
                entry = {
                    "kind": "message",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_call",
                                "id": f"c{n}",
                                "name": "read_log",
                                "arguments": {"line": n},
                            }
                        ],
                    },
                }
            elif phase == 2:
                entry = {
                    "kind": "message",
                    "message": {
                        "role": "tool",
                        "content": [
                            {
                                "type": "tool_result",
                                "toolCallId": f"c{n - 1}",
                                "name": "read_log",
                                "result": "log line " * 40,
                            }
                        ],
                    },
                }
            else:
                entry = {
                    "kind": "message",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "All good; **nothing** to report."}],
                    },
                }
            stamp = f"2026-01-01T00:{(n // 60000) % 60:02d}:{(n // 1000) % 60:02d}.{n % 1000:03d}Z"
            full = {
                "id": entry_id,
                "sessionId": session,
                "parentId": parent,
                **entry,
                "createdAt": stamp,
            }
            handle.write(json.dumps(full, separators=(",", ":")) + "\n")
            parent = entry_id
    assert parent is not None
    return parent


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def first_paint_ms(driver: Any, url: str) -> float:
    driver.get("about:blank")
    driver.get(url)
    wait_for(
        driver,
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1",
        timeout=120,
    )
    return float(driver.execute_script("return window.prismReadyAt"))


def measure_paint(driver: Any, path: Path, samples: int) -> dict[str, Any]:
    started = time.perf_counter()
    server = InspectorProcess(str(path))
    try:
        start_ms = (time.perf_counter() - started) * 1000
        idle = rss_mb(server.process.pid)
        paints = [first_paint_ms(driver, server.url) for _ in range(samples)]
        served = rss_mb(server.process.pid)
    finally:
        server.close()
    return {
        "serverStartMs": round(start_ms),
        "coldFirstPaintMs": round(paints[0]),
        "warmFirstPaintMedianMs": round(statistics.median(paints[1:] or paints)),
        "idleRssMb": round(idle, 1),
        "servedRssMb": round(served, 1),
    }


def measure_tail(driver: Any, path: Path, leaf: str, appends: int) -> dict[str, Any]:
    server = InspectorProcess(str(path))
    latencies: list[float] = []
    try:
        first_paint_ms(driver, server.url)
        wait_for(driver, lambda d: "on" in d.find_element(By.ID, "live").get_attribute("class"))
        store = create_jsonl_session_store(path)
        anyio.run(store.last_entry_id, "long")  # the writer's own index, read before timing
        gc.collect()
        gc.freeze()  # the writer's full collections are not the inspector's latency
        parent = leaf
        for n in range(appends):
            entry_id = f"tail-{n}"
            entry = {
                "id": entry_id,
                "sessionId": "long",
                "parentId": parent,
                "kind": "message",
                "message": {"role": "user", "content": [{"type": "text", "text": f"tail {n}"}]},
            }
            before = time.time() * 1000
            anyio.run(store.append, entry)
            wait_for(
                driver,
                lambda d, i=entry_id: (
                    d.execute_script("return (window.prismTailRendered||{}).id") == i
                ),
            )
            rendered = driver.execute_script("return window.prismTailRendered.at")
            latencies.append(rendered - before)
            parent = entry_id
    finally:
        server.close()
    return {
        "appends": appends,
        "medianMs": round(statistics.median(latencies), 1),
        "maxMs": round(max(latencies), 1),
        "samplesMs": [round(x) for x in latencies],
    }


def calibration_ms() -> float:
    """A fixed piece of pure-Python work (a 100,000-key dict built and read),
    to tell a loaded machine from a slow inspector: ~30 ms on an idle core."""
    started = time.perf_counter()
    table = {str(i): i for i in range(100_000)}
    assert sum(table[str(i)] for i in range(100_000)) == 4_999_950_000
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--baseline-entries", type=int, default=100)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--appends", type=int, default=20)
    args = parser.parse_args()
    driver = make_driver()
    try:
        with tempfile.TemporaryDirectory() as directory:
            small = Path(directory) / "small.jsonl"
            large = Path(directory) / "large.jsonl"
            write_session(small, args.baseline_entries)
            leaf = write_session(large, args.entries)
            baseline = measure_paint(driver, small, args.samples)
            measured = measure_paint(driver, large, args.samples)
            tail = measure_tail(driver, large, leaf, args.appends)
    finally:
        driver.quit()
    ratio = measured["coldFirstPaintMs"] / max(baseline["coldFirstPaintMs"], 1)
    result = {
        "calibrationMs": round(calibration_ms()),
        f"{args.baseline_entries} entries": baseline,
        f"{args.entries} entries": measured,
        "coldFirstPaintRatio": round(ratio, 2),
        "liveTail": tail,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
