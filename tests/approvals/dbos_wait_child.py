"""Child process of the DBOS approval-wait test: the approval scenario as a
DBOS workflow that waits for a decision.

    dbos_wait_child.py start SYSDB STORE COUNTS    # starts the run, SIGKILLs itself while it waits
    dbos_wait_child.py recover SYSDB STORE COUNTS  # DBOS recovers the run; approve it; print the result
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import anyio
import anyio.to_thread
from approval_scenario import SESSION, make_agent
from dbos import DBOS

from prism.approvals import pending_approvals
from prism.durable.dbos import DBOSAgent
from prism.stores.sqlite import SqliteSessionStore

RUN_ID = "run-dbos-wait"


def main() -> None:
    mode, sysdb, store, counts = sys.argv[1:5]
    agent = make_agent(SqliteSessionStore(store), Path(counts))
    wrapped = DBOSAgent(agent, name="approvals-dbos-wait")
    asked = threading.Event()
    wrapped.subscribe(lambda e: asked.set() if e["type"] == "approval_requested" else None)
    DBOS(
        config={
            "name": "prism-approval-wait",
            "system_database_url": sysdb,
            "executor_id": "worker-a",
            "application_version": "approval-wait",
            "notification_listener_polling_interval_sec": 0.1,
        }
    )
    DBOS.launch()  # in "recover", this picks the killed run up again

    async def start() -> None:
        await wrapped.start(SESSION, "refund order A-17", run_id=RUN_ID)
        assert await anyio.to_thread.run_sync(asked.wait, 60.0)
        os.kill(os.getpid(), signal.SIGKILL)  # killed while the run waits

    async def recover() -> None:
        assert await anyio.to_thread.run_sync(asked.wait, 60.0)  # the replay waits again
        (approval,) = await pending_approvals(agent.create_session(SESSION))
        await wrapped.decide(SESSION, approval["id"], "approve")
        result = await DBOSAgent.result(RUN_ID, polling_interval_sec=0.05)
        print(json.dumps({"text": result.text}))

    try:
        anyio.run(start if mode == "start" else recover)
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    main()
