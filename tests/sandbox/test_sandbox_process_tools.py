"""The model's process tools, dispatched like any tool, on both backends;
and a sandbox that cannot start processes fails closed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anyio
import pytest

from prism.sandbox import ERR_PROCESS_UNSUPPORTED, ProcessUnsupportedError
from prism.sandbox.base import AgentSandbox
from prism.sandbox.native import NETNS_CAPABILITIES
from prism.sandbox.tools import create_process_sessions, create_process_tools
from prism.security import NOOP_REDACTOR
from prism.tools import create_tool_registry, dispatch_tool_call

pytestmark = pytest.mark.anyio


async def test_the_model_starts_reads_writes_and_stops_a_process(sandbox: AgentSandbox) -> None:
    sessions = create_process_sessions(sandbox)
    registry = create_tool_registry(create_process_tools(sessions))

    async def call(name: str, **arguments: Any) -> Any:
        result = await dispatch_tool_call(
            {"id": f"c-{name}", "name": name, "arguments": arguments},
            registry=registry,
            redactor=NOOP_REDACTOR,
        )
        assert not result.get("isError"), result
        return result["value"]

    started = await call("process_start", command="echo ready; while read l; do echo got $l; done")
    assert started["ref"].startswith("prism-proc:")
    await call("process_write", id=started["id"], data="ping\n")
    await call("process_write", id=started["id"], data="", close_stdin=True)
    read = await call("process_read", id=started["id"], wait_seconds=20)
    assert read["output"] == "ready\ngot ping\n" and not read["running"] and read["exitCode"] == 0
    server = await call(
        "process_start",
        command="trap 'echo bye; exit 0' TERM; echo armed; while :; do sleep 1; done",
    )
    # A TERM that lands before the shell has installed its trap kills it
    # silently; on a loaded engine that window is real, so wait for it.
    seen = ""
    with anyio.fail_after(30):
        while "armed" not in seen:
            seen += (await call("process_read", id=server["id"]))["output"]
            await anyio.sleep(0.05)
    stopped = await call("process_stop", id=server["id"], signal="TERM", grace_seconds=10)
    assert "bye" in stopped["output"] and not stopped["killed"]
    bad = await dispatch_tool_call(
        {"id": "c-x", "name": "process_read", "arguments": {"id": server["id"]}},
        registry=registry,
        redactor=NOOP_REDACTOR,
    )
    assert bad.get("isError") and "no process" in str(bad["value"])
    await sessions.release_all()


def test_a_sandbox_without_processes_fails_closed() -> None:
    class OneShot:
        capabilities = replace(NETNS_CAPABILITIES, backend="one-shot", processes=False)

    with pytest.raises(ProcessUnsupportedError, match="one-shot sandbox cannot start") as caught:
        create_process_sessions(OneShot())  # type: ignore[arg-type]
    assert caught.value.code == ERR_PROCESS_UNSUPPORTED
