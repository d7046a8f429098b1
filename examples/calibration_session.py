"""A token calibration that persists with the session (mock provider, no network).

The provider bills twice Prism's chars/4 estimate. An agent with
``token_calibration=`` learns that over three runs and writes its fit into
the JSONL session file. A new agent on the same file (what a restarted
process builds, with a fresh ``TokenCalibration()`` and no calibration file)
estimates its first request within a few percent of the bill, and the
inspector's rows show the fit per model.

Run: .venv/bin/python examples/calibration_session.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_agent
from prism.attention import TokenCalibration, split_request_tokens
from prism.attention.calibration_entry import calibration_rows
from prism.providers import create_mock_provider, provider_done, provider_text_delta, provider_usage
from prism.stores import create_jsonl_session_store

PROMPT = "Summarize the release notes in one line. " * 20


def bills_double(request: dict[str, Any]) -> list[Any]:
    billed = 2 * split_request_tokens(request).total
    return [
        provider_text_delta("Done."),
        provider_usage(input_tokens=billed, output_tokens=2),
        provider_done(),
    ]


def make_agent(path: Path) -> Any:
    return create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(bills_double),
        store=create_jsonl_session_store(path),
        token_calibration=TokenCalibration(),  # no path: the session keeps it
    )


def error(event: dict[str, Any]) -> str:
    off = (event["calibratedTokens"] - event["reportedTokens"]) / event["reportedTokens"]
    return f"{off:+.0%}"


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.jsonl"
        first = make_agent(path).create_session("notes")
        seen: list[dict[str, Any]] = []
        first.subscribe(lambda e: seen.append(e) if e["type"] == "tokens_calibrated" else None)
        for _ in range(3):
            await first.run(PROMPT)
        print("first process, first estimate off by", error(seen[0]))

        restarted = make_agent(path).create_session("notes")
        again: list[dict[str, Any]] = []
        restarted.subscribe(lambda e: again.append(e) if e["type"] == "tokens_calibrated" else None)
        await restarted.run(PROMPT)
        print("after the restart, first estimate off by", error(again[0]))

        for row in calibration_rows(await restarted.branch_entries()):
            print(
                f"{row['model']}: prose ratio {row['ratios']['prose']:.2f}, "
                f"scale {row['scale']:.2f}, samples {row['turns']}"
            )


if __name__ == "__main__":
    anyio.run(main)
