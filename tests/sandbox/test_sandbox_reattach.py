"""Process refs across a host restart: a real second host process.
Docker: the container outlives the host and the ref re-attaches (validated,
fail closed). Native: the sandbox dies with its host and the ref fails."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.docker_engine import DockerEngineServer

from prism.sandbox import ERR_PROCESS_ATTACH, SandboxError, create_egress_policy
from prism.sandbox.docker import attach_docker_sandbox, create_docker_sandbox
from prism.sandbox.native import create_native_sandbox
from prism.sandbox.processes import ProcessRef

pytestmark = pytest.mark.anyio
HOST = Path(__file__).with_name("reattach_host.py")
ROOT = Path(__file__).resolve().parents[2]


def run_first_host(
    backend: str, env: dict[str, str] | None = None, mode: str = "crash"
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HOST), backend, mode],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python"), **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def test_docker_processes_reattach_after_a_host_restart(
    docker_engine: DockerEngineServer,
) -> None:
    kept = run_first_host("docker", {"DOCKER_HOST": docker_engine.host})
    sandbox = await attach_docker_sandbox(kept["container"], docker_host=docker_engine.host)
    try:
        process = await sandbox.attach_process(kept["ref"])
        await process.write("b\n", close=True)
        await process.wait(20)
        assert (await process.read()).text == "started\ngot a\ngot b\n"
        forged = ProcessRef.decode(kept["ref"])
        for tampered in (
            ProcessRef(forged.backend, forged.sandbox_id, forged.workspace, forged.proc, "0" * 64),
            ProcessRef(
                forged.backend, forged.sandbox_id, "/elsewhere", forged.proc, forged.fingerprint
            ),
            ProcessRef(
                "native-bwrap", forged.sandbox_id, forged.workspace, forged.proc, forged.fingerprint
            ),
        ):
            with pytest.raises(SandboxError) as caught:
                await sandbox.attach_process(tampered.encode())
            assert caught.value.code == ERR_PROCESS_ATTACH
    finally:
        await sandbox.close()
    with pytest.raises(SandboxError) as gone:
        await attach_docker_sandbox(kept["container"], docker_host=docker_engine.host)
    assert gone.value.code == ERR_PROCESS_ATTACH


async def test_native_processes_die_with_the_host_and_refs_fail_closed() -> None:
    kept = run_first_host("native")
    try:
        # The agent was killed with its host (PR_SET_PDEATHSIG): wait on its pidfd.
        try:
            pidfd = os.pidfd_open(kept["launcher"])
        except ProcessLookupError:
            pidfd = None
        if pidfd is not None:
            ready, _, _ = select.select([pidfd], [], [], 30)
            os.close(pidfd)
            assert ready, "the native sandbox outlived its host"
        async with await create_native_sandbox() as sandbox:
            with pytest.raises(SandboxError) as caught:
                await sandbox.attach_process(kept["ref"])
            assert caught.value.code == ERR_PROCESS_ATTACH
    finally:
        shutil.rmtree(kept["root"], ignore_errors=True)


def test_a_native_host_that_forgets_close_leaves_no_control_directory() -> None:
    kept = run_first_host("native", mode="exit")
    assert not Path(kept["root"]).exists()


async def test_a_detached_docker_sandbox_loses_its_egress(
    docker_engine: DockerEngineServer,
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    policy = create_egress_policy([{"host": "127.0.0.1", "port": port, "protocol": "http"}])
    sandbox = await create_docker_sandbox(docker_host=docker_engine.host, egress=policy)
    fetch = "import urllib.request,sys\ntry: urllib.request.urlopen(sys.argv[1], timeout=5)\nexcept Exception as e: print(type(e).__name__)"
    try:
        await sandbox.detach()
        sandbox = await attach_docker_sandbox(sandbox.container_id, docker_host=docker_engine.host)
        result = await sandbox.exec_file("python3", ["-c", fetch, f"http://127.0.0.1:{port}/"])
        assert result.stdout_text.strip() == "URLError"  # the relay finds no proxy: refused
    finally:
        await sandbox.close()
        server.shutdown()
        server.server_close()
