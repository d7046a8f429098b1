"""Child process of the crash matrix: runs the durable scenario and SIGKILLs
itself at one chosen step boundary (deterministic: a hook at that exact
point, no timers).

    crash_child.py STORE PATH COUNTS KILL [FRONTIER_OUT]
    crash_child.py --serve

STORE is ``jsonl`` or ``sqlite``. KILL is ``none`` or KIND:N with KIND one
of ``write`` (right after the Nth store write: every step boundary),
``torn`` (JSONL only: half of the Nth write reaches the file, then the
kill), ``tool`` (inside the Nth tool execution, after it counted itself)
or ``provider`` (at the start of the Nth provider request, before any
output). Before dying the child writes its attention frontier to
FRONTIER_OUT. With ``--serve`` it is the matrix's forking server
(zygote.py): each request's arguments are one run's, in a forked child.
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
from durable_scenario import SESSION, make_agent, script
from zygote import serve_forks

from prism.providers import create_mock_provider
from prism.stores.jsonl import JsonlSessionStore
from prism.stores.sqlite import SqliteSessionStore


def main(argv: list[str]) -> None:
    kind, path, counts, kill = argv[:4]
    frontier_out = Path(argv[4]) if len(argv) > 4 else None
    what, _, number = kill.partition(":")
    target = int(number) if number else 0
    seen = {"write": 0, "tool": 0, "provider": 0}
    session: Any = None

    def die() -> None:
        if frontier_out is not None:
            sticky = session.attention_sticky
            frontier_out.write_text(json.dumps(sticky.to_json() if sticky is not None else None))
        os.kill(os.getpid(), signal.SIGKILL)

    def hit(event: str) -> bool:
        seen[event] += 1
        return seen[event] == target

    class Jsonl(JsonlSessionStore):
        def _write(self, fd: int, payload: bytes) -> None:
            if what == "torn" and hit("write"):
                os.write(fd, payload[: len(payload) // 2])
                die()
            super()._write(fd, payload)

        async def append_many(self, entries: Any) -> None:
            await super().append_many(entries)
            if what == "write" and hit("write"):
                die()

    class Sqlite(SqliteSessionStore):
        async def append_many(self, entries: Any) -> None:
            await super().append_many(entries)
            if what == "write" and hit("write"):
                die()

    store = Jsonl(path) if kind == "jsonl" else Sqlite(path)

    def on_tool(_name: str) -> None:
        if what == "tool" and hit("tool"):
            die()

    def provider_script(request: Any) -> Any:
        if what == "provider" and hit("provider"):
            die()
        return script(request)

    agent = make_agent(
        store, Path(counts), on_tool=on_tool, provider=create_mock_provider(provider_script)
    )
    session = agent.create_session(SESSION)
    anyio.run(lambda: session.run("run the billing job"))


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve_forks(main)
    else:
        main(sys.argv[1:])
