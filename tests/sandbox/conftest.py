"""Sandboxes on both backends: the native one (bubblewrap) and Docker on the
session's private engine. ``sandbox_factory`` opens sandboxes that are
closed after the test whatever happens."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from tests.docker_engine import DockerEngineServer

from prism.sandbox import SandboxLimits
from prism.sandbox.base import AgentSandbox
from prism.sandbox.docker import create_docker_sandbox
from prism.sandbox.native import create_native_sandbox

SandboxFactory = Callable[..., Awaitable[AgentSandbox]]

# Small enough to hit quickly, large enough for python3 -c inside.
TEST_LIMITS = SandboxLimits(
    memory_bytes=256 * 1024 * 1024,
    max_processes=48,
    workspace_bytes=32 * 1024 * 1024,
    tmp_bytes=16 * 1024 * 1024,
    max_file_bytes=64 * 1024 * 1024,
    cpu_seconds=20,
    timeout=30,
)


@pytest.fixture(scope="session")
def native_ready() -> None:
    if shutil.which("bwrap") is None:
        pytest.fail(
            "bwrap not found: install bubblewrap (.ci/install-sandbox does it)", pytrace=False
        )


@pytest.fixture(params=["native", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "docker":
        request.getfixturevalue("docker_engine")
    else:
        request.getfixturevalue("native_ready")
    return name


@pytest.fixture
async def sandbox_factory(
    backend: str, request: pytest.FixtureRequest
) -> AsyncIterator[SandboxFactory]:
    opened: list[AgentSandbox] = []

    async def open_sandbox(**options: Any) -> AgentSandbox:
        options.setdefault("limits", TEST_LIMITS)
        if backend == "docker":
            engine: DockerEngineServer = request.getfixturevalue("docker_engine")
            sandbox: AgentSandbox = await create_docker_sandbox(docker_host=engine.host, **options)
        else:
            sandbox = await create_native_sandbox(**options)
        opened.append(sandbox)
        return sandbox

    try:
        yield open_sandbox
    finally:
        for sandbox in opened:
            await sandbox.close()


@pytest.fixture
async def sandbox(sandbox_factory: SandboxFactory) -> AgentSandbox:
    return await sandbox_factory()
