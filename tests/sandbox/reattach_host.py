"""A host process that starts a sandbox and a process in it, prints what a
resumed run would keep (container id, process ref), and dies without
closing anything: the first half of a host restart."""

from __future__ import annotations

import json
import os
import sys

import anyio

from prism.sandbox.docker import create_docker_sandbox
from prism.sandbox.native import create_native_sandbox


async def main(backend: str, mode: str) -> None:
    if backend == "docker":
        sandbox = await create_docker_sandbox()
        keep = {"container": sandbox.container_id}
    else:
        sandbox = await create_native_sandbox()
        keep = {"launcher": sandbox.launcher_pid, "root": str(sandbox.root)}
    process = await sandbox.start_process(
        "sh", ["-c", "echo started; while read l; do echo got $l; done"]
    )
    await process.write("a\n")
    print(json.dumps({**keep, "ref": process.ref}), flush=True)
    if mode == "crash":
        os._exit(0)  # a crash: no close, no cleanup
    # else: a host that forgets close() and exits normally


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
