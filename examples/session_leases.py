"""Session leases: one run per session, across store instances and processes.

Two store instances on one JSONL file stand in for two processes (a lease
is an flock, which excludes both alike). While one holds the session, the
other's claim, and a run of the session through it, are refused at once.

Run: .venv/bin/python examples/session_leases.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from prism import SessionBusyError, create_agent, create_jsonl_session_store, create_mock_provider
from prism.providers import provider_done, provider_text_delta


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.jsonl"
        holder = create_jsonl_session_store(path)
        other = create_jsonl_session_store(path)
        agent = create_agent(
            model={"provider": "mock", "model": "demo"},
            provider=create_mock_provider([provider_text_delta("Hello!"), provider_done()]),
            store=other,
        )
        async with await holder.claim("demo"):
            try:
                await other.claim("demo")
            except SessionBusyError as error:
                print("claim refused:", error)
            try:
                await agent.create_session("demo").run("Hi")
            except SessionBusyError as error:
                print("run refused:", error.code)
            print("other session free:", (await agent.create_session("other").run("Hi")).text)
        result = await agent.create_session("demo").run("Hi")
        print("after release:", result.text)
        print("lock files left:", Path(str(path) + ".leases").exists())


if __name__ == "__main__":
    anyio.run(main)
