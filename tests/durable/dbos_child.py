"""Child process of the DBOS crash matrix: the durable scenario as a DBOS
workflow, killed at one chosen point, or the process that recovers it.

    dbos_child.py run     SYSDB STORE COUNTS KILL FRONTIER_OUT EXECUTOR
    dbos_child.py recover SYSDB STORE COUNTS OUT_JSON EXECUTOR [DEAD_EXECUTOR]

SYSDB is DBOS's system database URL (``sqlite:///...`` or
``postgresql://...``); STORE is ``sqlite:PATH``, ``jsonl:PATH`` or
``postgres:DSN`` (the session store).
KILL is as in crash_child.py (``write:N``, ``torn:N`` on JSONL, ``tool:N``,
``provider:N`` or ``none``). ``run`` starts the run ``run-crash`` and dies
at KILL, after writing its attention frontier to FRONTIER_OUT. ``recover``
launches DBOS as EXECUTOR (which recovers that executor's pending runs by
itself), or, given DEAD_EXECUTOR, hands that other executor's runs to
the fleet (``recover_runs``), as a surviving worker of a fleet does; it then waits for
the run and writes its result, the branch and the frontier the replay
reached when it caught up (just after the last batch it found stored) to
OUT_JSON.
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
from dbos import DBOS
from durable_scenario import SESSION, make_agent, script

from prism.durable import dbos as prism_dbos
from prism.providers import create_mock_provider

RUN_ID = "run-crash"


def open_store(spec: str, hooks: dict[str, Any]) -> Any:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        from prism.stores.sqlite import SqliteSessionStore as Base
    elif kind == "jsonl":
        from prism.stores.jsonl import JsonlSessionStore as Base
    else:
        from prism.stores.postgres import PostgresSessionStore as Base

    class Store(Base):  # type: ignore[misc,valid-type]
        def _write(self, fd: int, payload: bytes) -> None:
            if hooks.get("torn", lambda: False)():
                os.write(fd, payload[: len(payload) // 2])
                hooks["die"]()
            super()._write(fd, payload)

        async def append_many(self, entries: Any) -> None:
            await super().append_many(entries)
            hooks["after_write"]()

    if kind == "postgres":
        return Store(dsn=where)
    return Store(where)


def launch(sysdb: str, executor: str) -> None:
    DBOS(
        config={
            "name": "prism-crash-matrix",
            "system_database_url": sysdb,
            "executor_id": executor,
            "application_version": "crash-matrix",
            # Short polls: these processes live for seconds.
            "notification_listener_polling_interval_sec": 0.1,
        }
    )
    DBOS.launch()


def run(
    sysdb: str, store_spec: str, counts: str, kill: str, frontier_out: str, executor: str
) -> None:
    what, _, number = kill.partition(":")
    target = int(number) if number else 0
    seen = {"write": 0, "torn": 0, "tool": 0, "provider": 0}
    sessions: list[Any] = []

    def die() -> None:
        sticky = sessions[-1].attention_sticky if sessions else None
        Path(frontier_out).write_text(json.dumps(sticky.to_json() if sticky is not None else None))
        os.kill(os.getpid(), signal.SIGKILL)

    def hit(event: str) -> bool:
        seen[event] += 1
        return what == event and seen[event] == target

    def after_write() -> None:
        if hit("write"):
            die()

    def on_tool(_name: str) -> None:
        if hit("tool"):
            die()

    def provider_script(request: Any) -> Any:
        if hit("provider"):
            die()
        return script(request)

    store = open_store(
        store_spec, {"after_write": after_write, "torn": lambda: hit("torn"), "die": die}
    )
    agent = make_agent(
        store, Path(counts), on_tool=on_tool, provider=create_mock_provider(provider_script)
    )
    # The frontier at the crash: the workflow's session is made inside it.
    original = agent.create_session

    def create_session(*args: Any, **kwargs: Any) -> Any:
        session = original(*args, **kwargs)
        sessions.append(session)
        return session

    agent.create_session = create_session  # type: ignore[method-assign]
    durable = prism_dbos.DBOSAgent(agent, name="billing")
    launch(sysdb, executor)

    async def main() -> None:
        await durable.run(SESSION, "run the billing job", run_id=RUN_ID)

    anyio.run(main)
    DBOS.destroy()


class CatchUp(prism_dbos.DBOSJournal):
    """Notes the frontier just after each batch a replay found stored."""

    frontier: Any = None

    async def append(self, entries: Any, write: Any) -> Any:
        before = self.replayed_entries
        stored = await super().append(entries, write)
        if self.replayed_entries - before == len(entries) and self._run is not None:
            sticky = self._run.port.frontier
            CatchUp.frontier = sticky.to_json() if sticky is not None else None
        return stored


def recover(
    sysdb: str, store_spec: str, counts: str, out: str, executor: str, dead: str | None
) -> None:
    store = open_store(store_spec, {"after_write": lambda: None})
    agent = make_agent(store, Path(counts))
    prism_dbos.DBOSJournal = CatchUp  # type: ignore[misc]
    prism_dbos.DBOSAgent(agent, name="billing")
    events: list[str] = []
    launch(sysdb, executor)

    async def main() -> None:
        if dead is not None:
            assert await prism_dbos.recover_runs(dead) == [RUN_ID]
        result = await prism_dbos.DBOSAgent.result(RUN_ID, polling_interval_sec=0.05)
        session = agent.create_session(SESSION)
        Path(out).write_text(
            json.dumps(
                {
                    "text": result.text,
                    "runId": result.run_id,
                    "branch": await session.branch_entries(),
                    "catchUpFrontier": CatchUp.frontier,
                    "events": events,
                }
            )
        )

    anyio.run(main)
    DBOS.destroy()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "run":
        run(*args)
    else:
        recover(*args[:5], args[5] if len(args) > 5 else None)
