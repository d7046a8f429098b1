"""Child process of the approval tests: starts the scenario's run (it
pauses) or resumes it with decisions, and prints the result as JSON.

    approval_child.py STORE LOCATION COUNTS MODE [DECISIONS]

STORE is ``jsonl``, ``sqlite`` or ``postgres`` (LOCATION: a path or a DSN);
MODE ``start``, ``resume`` or ``resume-kill`` (SIGKILLs itself inside the
refund tool, after it counted itself); DECISIONS a JSON object of approval
id to ``"approve"``/``"deny"`` or ``{"edit": {...arguments}}``.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio
from approval_scenario import SESSION, make_agent

from prism.approvals import ApprovalDecision


def open_store(kind: str, location: str) -> Any:
    if kind == "jsonl":
        from prism.stores.jsonl import JsonlSessionStore

        return JsonlSessionStore(location)
    if kind == "sqlite":
        from prism.stores.sqlite import SqliteSessionStore

        return SqliteSessionStore(location)
    from prism.stores.postgres import create_postgres_session_store

    return create_postgres_session_store(location, connect_timeout=10)


def decision(value: Any) -> Any:
    if isinstance(value, dict) and "edit" in value:
        return ApprovalDecision.edit(arguments=value["edit"])
    if isinstance(value, dict) and "deny" in value:
        return ApprovalDecision.deny(value["deny"])
    return value


async def main() -> None:
    kind, location, counts, mode = sys.argv[1:5]
    decisions = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None

    def on_tool(_name: str) -> None:
        if mode == "resume-kill":
            os.kill(os.getpid(), signal.SIGKILL)

    store = open_store(kind, location)
    try:
        session = make_agent(store, Path(counts), on_tool).create_session(SESSION)
        if mode == "start":
            result: Any = await session.run("refund order A-17")
        else:
            chosen = None if decisions is None else {k: decision(v) for k, v in decisions.items()}
            result = await session.resume(decisions=chosen)
        print(json.dumps(None if result is None else result.to_json()))
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            closing = close()
            if inspect.isawaitable(closing):
                await closing


if __name__ == "__main__":
    anyio.run(main)
