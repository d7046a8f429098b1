"""Lifecycle, cancellation, bad options, and the native netns fallback."""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from tests.docker_engine import DockerEngineServer

from prism.sandbox import (
    SandboxClosedError,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
    create_egress_policy,
)
from prism.sandbox.base import AgentSandbox
from prism.sandbox.docker import create_docker_sandbox
from prism.sandbox.native import NETNS_CAPABILITIES, create_native_sandbox

pytestmark = pytest.mark.anyio
SandboxFactory = Callable[..., Awaitable[AgentSandbox]]
COUNT_SLEEPS = "for p in /proc/[0-9]*; do cat $p/comm 2>/dev/null; done | grep -c '^sleep$' || true"


async def test_a_cancelled_call_kills_its_command(sandbox: AgentSandbox) -> None:
    with anyio.move_on_after(1) as scope:
        await sandbox.exec("sleep 1000 & sleep 1000")
    assert scope.cancelled_caught
    assert (await sandbox.exec(COUNT_SLEEPS)).stdout_text.strip() == "0"


async def test_stop_kills_everything_and_refuses_later_calls(sandbox: AgentSandbox) -> None:
    await sandbox.start_process("sleep", ["1000"])
    assert await sandbox.status() == "running"
    await sandbox.stop()
    assert await sandbox.status() == "stopped"
    with pytest.raises(SandboxClosedError, match="is stopped"):
        await sandbox.exec_file("true")
    await sandbox.close()
    assert await sandbox.status() == "closed"


async def test_bad_sandbox_options_fail_clearly(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    missing = tmp_path / "missing"
    before = set(Path("/tmp").glob("prism-*"))
    if backend == "docker":
        engine: DockerEngineServer = request.getfixturevalue("docker_engine")
        with pytest.raises(SandboxError, match="is not a directory"):
            await create_docker_sandbox(docker_host=engine.host, source=missing)
        with pytest.raises(SandboxError, match="must fit in memory_bytes"):
            await create_docker_sandbox(
                docker_host=engine.host, limits=SandboxLimits(memory_bytes=128 * 1024 * 1024)
            )
    else:
        with pytest.raises(SandboxError, match="is not a directory"):
            await create_native_sandbox(source=missing)
        with pytest.raises(SandboxError, match="mode must be auto, bwrap or netns"):
            await create_native_sandbox(mode="vm")  # type: ignore[arg-type]
    assert set(Path("/tmp").glob("prism-*")) <= before  # nothing left behind


async def test_the_netns_fallback_is_truthful_and_network_free() -> None:
    with pytest.raises(SandboxUnavailableError, match="needs the bwrap mode"):
        await create_native_sandbox(mode="netns", egress=create_egress_policy())
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        async with await create_native_sandbox(mode="netns") as sandbox:
            assert sandbox.capabilities == NETNS_CAPABILITIES
            assert not sandbox.capabilities.containment_claim
            port = server.getsockname()[1]
            probe = await sandbox.exec_file(
                "/usr/bin/python3",
                [
                    "-c",
                    f"import socket\ntry: socket.create_connection(('127.0.0.1',{port}),timeout=3)\nexcept OSError: print('blocked')",
                ],
            )
            assert probe.stdout_text == "blocked\n"
            written = await sandbox.exec("echo hi > note && cat note")
            assert written.stdout_text == "hi\n"
            assert sandbox.workspace.startswith("/tmp/prism-native-")
    finally:
        server.close()


async def test_auto_falls_back_to_netns_where_bwrap_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bwrap that is installed but refused by the kernel, as on a host
    # with user namespaces switched off (the message is bwrap's own).
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(SandboxUnavailableError, match="No permissions to create new namespace"):
        await create_native_sandbox(mode="bwrap")
    async with await create_native_sandbox() as sandbox:
        assert sandbox.capabilities == NETNS_CAPABILITIES
        assert (await sandbox.exec_file("echo", ["weaker, and says so"])).ok
