"""Durable runs on DBOS: a run killed mid-way is recovered by DBOS.

The script starts itself as a child process that runs a session as a DBOS
workflow (``prism.durable.dbos``, extra ``prism-harness[dbos]``) and is
SIGKILLed inside the ``charge_card`` tool, after the card was charged and
before its result was stored. The parent then launches DBOS on the same
system database (an SQLite file: one machine) and DBOS recovers the run by
itself: the recorded provider turns and the ``lookup_order`` call return
their recorded results, nothing stored is stored again, and ``charge_card``
(not idempotent) is answered with an ``interrupted`` error instead of
charging twice. For a fleet, point ``system_database_url`` at PostgreSQL
(docs/durable.md).

Run: .venv/bin/python examples/durable_dbos.py
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
from dbos import DBOS

from prism import create_agent, create_mock_provider, define_tool
from prism.durable.dbos import DBOSAgent
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.stores import create_sqlite_session_store

RUN_ID = "run-order-A-17"


def script(request: Any) -> list[Any]:
    """The model: look the order up, charge it, then answer."""
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


def start(home: Path, *, die_in_charge: bool) -> DBOSAgent:
    """What every process that may run or recover the runs does first:
    build the agent, register it by name, then launch DBOS."""

    def lookup_order(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"order": args["order"], "total_cents": 1250}

    def charge_card(args: dict[str, Any], ctx: Any) -> str:
        with (home / "ledger.txt").open("a") as ledger:
            ledger.write(f"charged {args['cents']}\n")
        if die_in_charge:
            os.kill(os.getpid(), signal.SIGKILL)  # the crash: result never stored
        return "charged"

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[
            define_tool("lookup_order", lookup_order, idempotent=True),
            define_tool("charge_card", charge_card),  # not idempotent: never run twice
        ],
        store=create_sqlite_session_store(home / "sessions.sqlite"),
    )
    durable = DBOSAgent(agent, name="billing")
    DBOS(
        config={
            "name": "prism-billing",
            "system_database_url": f"sqlite:///{home / 'dbos.sqlite'}",
            "log_level": "WARNING",
        }
    )
    DBOS.launch()  # recovers this executor's unfinished runs
    return durable


def child(home: Path) -> None:
    durable = start(home, die_in_charge=True)
    anyio.run(lambda: durable.run("order-A-17", "Charge order A-17", run_id=RUN_ID))


async def recovered(durable: DBOSAgent, home: Path) -> None:
    result = await DBOSAgent.result(RUN_ID, polling_interval_sec=0.1)
    print("recovered run:", result.run_id, "->", result.text)
    session = durable.agent.create_session("order-A-17")
    for message in await session.messages():
        for block in message["content"]:
            if block["type"] == "tool_result":
                code = block["result"].get("code") if block.get("isError") else "ok"
                print(f"{block['name']} result: {code}")
    print("ledger charges:", len((home / "ledger.txt").read_text().splitlines()))
    again = await durable.run("order-A-17", "Charge order A-17", run_id=RUN_ID)
    print("same run id again:", again.text == result.text)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        child(Path(sys.argv[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        done = subprocess.run([sys.executable, __file__, "child", tmp], check=False)
        print("child killed:", done.returncode == -signal.SIGKILL)
        durable = start(home, die_in_charge=False)
        try:
            anyio.run(recovered, durable, home)
        finally:
            DBOS.destroy()


if __name__ == "__main__":
    main()
