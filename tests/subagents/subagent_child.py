"""Child process of the supervisor resume tests: runs or resumes the parent
on a SQLite store and prints its result as JSON.

    subagent_child.py STORE COUNTS MODE [DECISIONS]

MODE: ``start`` (delegates to failer, aborter, approver: pauses),
``resume`` (with DECISIONS, a JSON object of approval id to "approve" or
"deny"), ``kill`` (delegates to quick and worker; SIGKILLs itself inside
the worker's tool once quick has stopped), ``kill-resume``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio
from subagent_scenario import PARENT, THREE, Scenario

from prism.stores.sqlite import SqliteSessionStore

TWO = [("call_quick", "quick"), ("call_worker", "worker")]


async def main() -> None:
    location, counts, mode = sys.argv[1:4]
    decisions = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    quick_stopped = anyio.Event()

    async def on_step() -> None:
        if mode == "kill":
            await quick_stopped.wait()
            os.kill(os.getpid(), signal.SIGKILL)

    scenario = Scenario(SqliteSessionStore(location), Path(counts), on_step)
    session = scenario.parent(TWO if mode.startswith("kill") else THREE).create_session(PARENT)
    events: list[dict[str, Any]] = []

    def listen(event: Any) -> None:
        if event["type"].startswith("subagent_"):
            events.append(event)
            if event["type"] == "subagent_stopped" and event["child"] == "quick":
                quick_stopped.set()

    session.subscribe(listen)
    if mode in ("start", "kill"):
        result = await session.run("go")
    else:
        result = await session.resume(decisions)
    assert result is not None
    print(json.dumps({"result": result.to_json(), "events": events}))


anyio.run(main)
