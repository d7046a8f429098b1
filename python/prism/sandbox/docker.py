"""The Docker backend: one disposable container per sandbox, through the
``docker`` CLI.

Why the CLI and not the Docker SDK: every command, process and file
operation goes through the in-sandbox agent's socket, so the engine is only
asked to create, inspect and remove a container and to import the image.
That is five CLI calls; the SDK would add a dependency (and requests) for
them and buy no speed where it matters (a warm ``exec_file`` never touches
the engine).

The container: ``--network none``, user 1000, read-only root, ``--cap-drop
ALL``, ``no-new-privileges``, memory (no swap), CPU, pids and tmpfs-size
limits, ``--init`` to reap orphans, the source read-only at ``/source`` and a
host control directory at ``/prism-control`` holding the agent's socket (and
the egress proxy's). The container outlives the host process, so a new host
can re-attach with :func:`attach_docker_sandbox`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from prism.sandbox.base import DEFAULT_PATH, AgentSandbox
from prism.sandbox.client import AgentClient
from prism.sandbox.contract import (
    SandboxCapabilities,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
)
from prism.sandbox.egress import EgressPolicy, EgressProxy, EventSink, proxy_env
from prism.sandbox.image import SANDBOX_UID, ensure_sandbox_image
from prism.sandbox.native import EGRESS_PORT

LABEL = "dev.prism.sandbox"
DOCKER_CAPABILITIES = SandboxCapabilities(
    backend="docker",
    workspace_coherent=True,
    filesystem_isolated=True,
    network_isolated=True,
    process_isolated=True,
    privilege_isolated=True,
    egress_restricted=True,
    processes=True,
    reattach=True,
)
_images: dict[str, str] = {}


class DockerEngine:
    """Which engine to talk to: the CLI plus ``DOCKER_HOST``."""

    def __init__(self, host: str | None = None) -> None:
        cli = shutil.which("docker")
        if cli is None:
            raise SandboxUnavailableError(
                "the docker CLI is not installed (apt-get install docker.io)"
            )
        self.cli = [cli]
        self.env = {"PATH": os.environ.get("PATH", DEFAULT_PATH)}
        host = host or os.environ.get("DOCKER_HOST")
        if host:
            self.env["DOCKER_HOST"] = host
        self.host = host or "default"

    async def run(self, *args: str, check: bool = True) -> str:
        done = await anyio.run_process([*self.cli, *args], env=self.env, check=False)
        if check and done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip()
            raise SandboxError(f"docker {args[0]} failed: {message}")
        return done.stdout.decode().strip()

    async def image(self) -> str:
        if self.host not in _images:
            _images[self.host] = await anyio.to_thread.run_sync(
                ensure_sandbox_image, self.cli, self.env
            )
        return _images[self.host]


def _run_args(*, name: str, root: Path, limits: SandboxLimits, source: Path | None) -> list[str]:
    args = ["run", "-d", "--pull", "never", "--init", "--name", name, "--network", "none"]
    args += ["--user", f"{SANDBOX_UID}:{SANDBOX_UID}", "--read-only", "--cap-drop", "ALL"]
    args += ["--security-opt", "no-new-privileges", "--ipc", "private"]
    args += ["--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes)]
    args += ["--cpus", str(limits.cpus), "--pids-limit", str(limits.max_processes)]
    args += ["--ulimit", f"nofile={limits.max_open_files}:{limits.max_open_files}"]
    args += ["--ulimit", f"fsize={limits.max_file_bytes}:{limits.max_file_bytes}"]
    args += [
        "--tmpfs",
        f"/workspace:rw,exec,nosuid,nodev,size={limits.workspace_bytes},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755",
    ]
    args += ["--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777"]
    args += ["-v", f"{root / 'control'}:/prism-control"]
    if source is not None:
        args += ["-v", f"{source}:/source:ro"]
    limits_json = json.dumps({k: getattr(limits, k) for k in limits.__slots__})
    args += ["--label", f"{LABEL}=1", "--label", f"{LABEL}.root={root}"]
    args += ["--label", f"{LABEL}.limits={limits_json}"]
    return args


class DockerSandbox(AgentSandbox):
    backend = "docker"

    def __init__(
        self,
        *,
        engine: DockerEngine,
        container_id: str,
        root: Path,
        limits: SandboxLimits,
        env: Mapping[str, str],
        proxy: EgressProxy | None,
    ) -> None:
        super().__init__(
            sandbox_id=container_id,
            workspace="/workspace",
            limits=limits,
            capabilities=DOCKER_CAPABILITIES,
            base_env=env,
        )
        self.engine = engine
        self.container_id = container_id
        self._root = root
        self._proxy = proxy

    async def _connect(self, *, wait: float) -> None:
        """Connect to the agent once its socket exists (the container starts it)."""
        socket_path = self._root / "control" / "agent.sock"
        delay = 0.005
        with anyio.move_on_after(wait):
            while not socket_path.exists():
                await anyio.sleep(delay)  # no event to wait on: the socket appears in a bind mount
                delay = min(delay * 2, 0.02)
        if not socket_path.exists():
            logs = await self.engine.run("logs", "--tail", "20", self.container_id, check=False)
            raise SandboxUnavailableError(f"the sandbox container did not start its agent: {logs}")
        self._client = await AgentClient.connect(str(socket_path))
        self._state = "running"

    async def _alive(self) -> bool:
        state = await self.engine.run(
            "inspect", "--format", "{{.State.Running}}", self.container_id, check=False
        )
        return state == "true"

    async def _oom_kills(self) -> int:
        for path in (
            f"/sys/fs/cgroup/memory/docker/{self.container_id}/memory.oom_control",
            f"/sys/fs/cgroup/docker/{self.container_id}/memory.events",
            f"/sys/fs/cgroup/system.slice/docker-{self.container_id}.scope/memory.events",
        ):
            try:
                text = Path(path).read_text()  # a few bytes of cgroupfs: immaterial blocking
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    async def _terminate(self, *, force: bool) -> None:
        if not force:
            await self.engine.run("stop", "--time", "2", self.container_id, check=False)
        await self.engine.run("rm", "-f", "-v", self.container_id, check=False)
        if self._proxy is not None:
            self._proxy.close()
        shutil.rmtree(self._root, ignore_errors=True)

    async def detach(self) -> None:
        """Drop this host's connection but leave the container running (for
        a later :func:`attach_docker_sandbox`)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        if self._proxy is not None:
            self._proxy.close()  # the proxy lives in this host: egress is deny-all from now on
        self._state = "closed"


async def create_docker_sandbox(
    *,
    docker_host: str | None = None,
    limits: SandboxLimits | None = None,
    source: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    egress: EgressPolicy | None = None,
    on_event: EventSink | None = None,
) -> DockerSandbox:
    """Start a disposable container on the local sandbox image (imported on
    first use, never pulled). ``env`` is the exact environment on top of
    ``PATH``; ``source`` is mounted read-only at ``/source``."""
    engine = DockerEngine(docker_host)
    limits = limits or SandboxLimits()
    source_path = None if source is None else Path(source).resolve()
    if source_path is not None and not source_path.is_dir():
        raise SandboxError(f"sandbox source {source_path} is not a directory")
    if limits.workspace_bytes + limits.tmp_bytes + 64 * 1024 * 1024 > limits.memory_bytes:
        # tmpfs pages are charged to the container's memory cgroup: a full
        # workspace must leave room for the agent, or the OOM killer takes it.
        raise SandboxError(
            "Docker sandbox limits: workspace_bytes + tmp_bytes + 64 MiB must fit in memory_bytes "
            f"({limits.workspace_bytes} + {limits.tmp_bytes} > {limits.memory_bytes} - 64 MiB)"
        )
    image = await engine.image()
    root = Path(tempfile.mkdtemp(prefix="prism-docker-"))
    root.chmod(0o711)
    control = root / "control"
    control.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(control, SANDBOX_UID, SANDBOX_UID)
    base_env = {"PATH": DEFAULT_PATH, **(env or {})}
    proxy = None
    agent = [
        "/usr/bin/python3",
        "-I",
        "-S",
        "/opt/prism/agent.py",
        "--socket=/prism-control/agent.sock",
        f"--rlimits=cpu:{limits.cpu_seconds}",  # per command: the agent itself has none
    ]
    if egress is not None:
        owner = SANDBOX_UID if os.geteuid() == 0 else None
        proxy = EgressProxy(egress, str(control / "egress.sock"), on_event=on_event, owner=owner)
        base_env.update(proxy_env(EGRESS_PORT))
        agent += [f"--egress-port={EGRESS_PORT}", "--egress-socket=/prism-control/egress.sock"]
    name = f"prism-sbx-{secrets.token_hex(6)}"
    args = _run_args(name=name, root=root, limits=limits, source=source_path)
    try:
        container_id = await engine.run(*args, image, *agent)
    except BaseException:
        if proxy is not None:
            proxy.close()
        shutil.rmtree(root, ignore_errors=True)
        await engine.run("rm", "-f", name, check=False)
        raise
    sandbox = DockerSandbox(
        engine=engine,
        container_id=container_id,
        root=root,
        limits=limits,
        env=base_env,
        proxy=proxy,
    )
    try:
        await sandbox._connect(wait=30)
    except BaseException:
        await sandbox.close()
        raise
    return sandbox


async def attach_docker_sandbox(
    container_id: str, *, docker_host: str | None = None, env: Mapping[str, str] | None = None
) -> DockerSandbox:
    """Re-attach to a running sandbox container after the host restarted.

    Only a container this module created (its label) that is still running
    is accepted. The egress proxy does not survive the host, so a re-attached
    sandbox has no egress at all (still restricted: deny-all).
    """
    engine = DockerEngine(docker_host)
    raw = await engine.run("inspect", "--type", "container", container_id, check=False)
    try:
        info: dict[str, Any] = json.loads(raw)[0]
    except (ValueError, IndexError) as exc:
        raise SandboxError(
            f"no sandbox container {container_id!r}", code="ERR_PRISM_PROCESS_ATTACH"
        ) from exc
    labels = info.get("Config", {}).get("Labels") or {}
    if labels.get(LABEL) != "1" or not info.get("State", {}).get("Running"):
        raise SandboxError(
            f"container {container_id[:12]} is not a running Prism sandbox",
            code="ERR_PRISM_PROCESS_ATTACH",
        )
    limits = SandboxLimits(**json.loads(labels[f"{LABEL}.limits"]))
    sandbox = DockerSandbox(
        engine=engine,
        container_id=str(info["Id"]),
        root=Path(labels[f"{LABEL}.root"]),
        limits=limits,
        env={"PATH": DEFAULT_PATH, **(env or {})},
        proxy=None,
    )
    await sandbox._connect(wait=5)
    return sandbox
