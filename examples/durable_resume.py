"""Durable runs: a run killed mid-way is resumed from its checkpoints.

The script starts itself as a child process that runs a durable session on a
JSONL file and is SIGKILLed inside the ``charge_card`` tool (after the card
was charged, before the result was stored). The parent then resumes the
session: the provider turns already recorded are not requested again, the
idempotent ``lookup_order`` is not re-run (its result is stored), and
``charge_card`` (not idempotent) is answered with an ``interrupted`` error
instead of charging twice. The model then finishes the run.

Run: .venv/bin/python examples/durable_resume.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_agent, create_jsonl_session_store, create_mock_provider, define_tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call


def script(request: Any) -> list[Any]:
    """The model: look the order up, charge it, then answer. A pure function
    of the conversation, so a resumed process continues where it stopped."""
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        return [
            provider_tool_call("call_lookup", "lookup_order", {"order": "A-17"}),
            provider_done(),
        ]
    if turn == 1:
        return [provider_tool_call("call_charge", "charge_card", {"cents": 1250}), provider_done()]
    last = request["messages"][-1]["content"][0]
    outcome = "was interrupted" if last.get("isError") else "went through"
    return [provider_text_delta(f"The charge {outcome}; please check the ledger."), provider_done()]


def make_agent(path: Path, ledger: Path, *, die_in_charge: bool) -> Any:
    def lookup_order(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"order": args["order"], "total_cents": 1250}

    def charge_card(args: dict[str, Any], ctx: Any) -> str:
        with ledger.open("a") as handle:
            handle.write(f"charged {args['cents']}\n")
        if die_in_charge:
            os.kill(os.getpid(), signal.SIGKILL)  # the crash: result never stored
        return "charged"

    return create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[
            define_tool("lookup_order", lookup_order, idempotent=True),
            define_tool("charge_card", charge_card),  # not idempotent: never run twice
        ],
        store=create_jsonl_session_store(path),
        durable=True,
    )


def child(path: Path, ledger: Path) -> None:
    session = make_agent(path, ledger, die_in_charge=True).create_session("order-A-17")
    session.run_sync("Charge order A-17")


async def resume(path: Path, ledger: Path) -> None:
    session = make_agent(path, ledger, die_in_charge=False).create_session("order-A-17")
    phases = [e["data"]["phase"] for e in await session.entries() if e["kind"] == "custom"]
    print("checkpoints before resume:", phases)
    result = await session.resume()
    assert result is not None
    print("resumed run:", result.run_id.startswith("run_"), "->", result.text)
    for message in await session.messages():
        for block in message["content"]:
            if block["type"] == "tool_result":
                code = block["result"].get("code") if block.get("isError") else "ok"
                print(f"{block['name']} result: {code}")
    print("ledger charges:", len(ledger.read_text().splitlines()))
    print("resume again:", await session.resume())


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "child":
        child(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path, ledger = Path(tmp) / "sessions.jsonl", Path(tmp) / "ledger.txt"
        done = subprocess.run(
            [sys.executable, __file__, "child", str(path), str(ledger)], check=False
        )
        print("child killed:", done.returncode == -signal.SIGKILL)
        anyio.run(resume, path, ledger)


if __name__ == "__main__":
    main()
