"""The native backend: bubblewrap, or a network namespace alone where bwrap
is missing.

With bwrap the sandbox is one set of namespaces (user, mount, PID, IPC, UTS,
network, cgroup) built once per sandbox: the host's system directories
read-only, a sized tmpfs as the only writable workspace, a private ``/tmp``,
no capabilities, ``--die-with-parent``. Run as root, the host gives each
sandbox its own unused uid, because the kernel never counts root's processes
against ``RLIMIT_NPROC``: with a fresh uid the process limit holds and is
not shared with any other sandbox.

Without bwrap (mode ``"netns"``), commands run as the host user in a fresh
network namespace on a host temp directory: network isolation only, and the
capabilities say so.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Literal

import anyio
from anyio.abc import Process

from prism.sandbox.base import DEFAULT_PATH, AgentSandbox
from prism.sandbox.client import AgentClient
from prism.sandbox.contract import (
    SandboxCapabilities,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
)
from prism.sandbox.egress import EgressPolicy, EgressProxy, EventSink, proxy_env

AGENT_SOURCE = Path(__file__).with_name("_agent.py")
SANDBOX_PYTHON = "/usr/bin/python3"
EGRESS_PORT = 3128
_UID_BASE = 1 << 20
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
)

NativeMode = Literal["auto", "bwrap", "netns"]

BWRAP_CAPABILITIES = SandboxCapabilities(
    backend="native-bwrap",
    workspace_coherent=True,
    filesystem_isolated=True,
    network_isolated=True,
    process_isolated=True,
    privilege_isolated=True,
    egress_restricted=True,
    processes=True,
    reattach=False,
)
NETNS_CAPABILITIES = SandboxCapabilities(
    backend="native-netns",
    workspace_coherent=True,
    filesystem_isolated=False,
    network_isolated=True,
    process_isolated=False,
    privilege_isolated=False,
    egress_restricted=True,
    processes=True,
    reattach=False,
)


def rlimit_spec(limits: SandboxLimits, *, processes: bool) -> str:
    specs = [
        f"as:{limits.memory_bytes}",
        f"cpu:{limits.cpu_seconds}",
        f"nofile:{limits.max_open_files}",
        f"fsize:{limits.max_file_bytes}",
    ]
    if processes:
        specs.append(f"nproc:{limits.max_processes}")
    return "--rlimits=" + ",".join(specs)


def _system_binds() -> list[str]:
    # Parents bwrap creates for nested mount points default to 0700 (root):
    # the sandbox's uid must be able to walk them.
    args = ["--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/opt"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for path in _ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def bwrap_argv(
    *, root: Path, uid: int | None, limits: SandboxLimits, source: Path | None, egress: bool
) -> list[str]:
    """bwrap's arguments. Run by root (``uid`` given), bwrap builds the
    namespaces with root's own privilege (no user namespace, so the host's
    paths bind as they are) and ``setpriv`` then becomes ``uid`` with no
    capabilities, an empty bounding set and no_new_privs before the agent
    starts. Run by anyone else, bwrap uses an unprivileged user namespace."""
    bwrap = shutil.which("bwrap")
    setpriv = shutil.which("setpriv")
    if bwrap is None:
        raise SandboxUnavailableError("bubblewrap (bwrap) is not installed")
    args = [bwrap, *_system_binds()]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    args += ["--size", str(limits.workspace_bytes), "--perms", "0777", "--tmpfs", "/workspace"]
    if source is not None:
        args += ["--ro-bind", str(source), "/source"]
    args += ["--ro-bind", str(root / "boot"), "/opt/prism"]
    args += ["--bind", str(root / "control"), "/prism-control"]
    args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    args += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    args += ["--setenv", "PATH", DEFAULT_PATH, "--chdir", "/workspace", "--remount-ro", "/"]
    if uid is None:
        args += ["--unshare-user", "--cap-drop", "ALL", "--"]
    else:
        if setpriv is None:
            raise SandboxUnavailableError("setpriv (util-linux) is not installed")
        args += ["--", setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    agent = [SANDBOX_PYTHON, "-I", "-S", "/opt/prism/agent.py"]
    agent += ["--socket=/prism-control/agent.sock", rlimit_spec(limits, processes=True)]
    if egress:
        agent += [f"--egress-port={EGRESS_PORT}", "--egress-socket=/prism-control/egress.sock"]
    return args + agent


def _choose_mode(mode: NativeMode) -> Literal["bwrap", "netns"]:
    if mode not in ("auto", "bwrap", "netns"):
        raise SandboxError(f"native sandbox mode must be auto, bwrap or netns, not {mode!r}")
    if not Path(SANDBOX_PYTHON).exists():
        raise SandboxUnavailableError(
            f"the native sandbox runs its agent with {SANDBOX_PYTHON}, which is missing"
        )
    if mode == "auto":
        return "bwrap" if shutil.which("bwrap") else "netns"
    return mode


class NativeSandbox(AgentSandbox):
    def __init__(
        self,
        *,
        mode: Literal["bwrap", "netns"],
        root: Path,
        limits: SandboxLimits,
        env: Mapping[str, str],
        workspace: str,
        proxy: EgressProxy | None,
    ) -> None:
        super().__init__(
            sandbox_id=f"native-{root.name}",
            workspace=workspace,
            limits=limits,
            capabilities=BWRAP_CAPABILITIES if mode == "bwrap" else NETNS_CAPABILITIES,
            base_env=env,
        )
        self.backend = f"native-{mode}"
        self.mode = mode
        self._root = root
        self._proxy = proxy
        # A host that exits without close() still removes the control directory
        # (the sandbox itself dies with the host: --die-with-parent).
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(root), True)
        self._process: Process | None = None
        self._log: IO[bytes] | None = None

    @property
    def root(self) -> Path:
        """The host directory holding this sandbox's control socket and agent."""
        return self._root

    @property
    def launcher_pid(self) -> int | None:
        """Pid of bwrap (or unshare) on the host; everything inside dies with it."""
        return None if self._process is None else self._process.pid

    async def _launch(self, argv: list[str]) -> None:
        self._log = tempfile.TemporaryFile()
        self._process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        assert self._process.stdout is not None
        ready = b""
        with anyio.move_on_after(30):
            async for chunk in self._process.stdout:
                ready += chunk
                if b"ready" in ready:
                    break
        if b"ready" not in ready:
            log = self._startup_log()
            await self._terminate(force=True)
            raise SandboxUnavailableError(f"the native sandbox did not start: {log}")
        self._client = await AgentClient.connect(str(self._root / "control" / "agent.sock"))
        self._state = "running"

    def _startup_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read(4000).decode("utf-8", "replace").strip() or "no output"

    async def _alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def _terminate(self, *, force: bool) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.returncode is None:
                process.send_signal(signal.SIGKILL if force else signal.SIGTERM)
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            await process.aclose()
        if self._proxy is not None:
            self._proxy.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        self._cleanup()


async def create_native_sandbox(
    *,
    limits: SandboxLimits | None = None,
    mode: NativeMode = "auto",
    source: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    egress: EgressPolicy | None = None,
    on_event: EventSink | None = None,
) -> NativeSandbox:
    """Start a native sandbox. ``env`` is the exact environment commands get
    on top of ``PATH`` (nothing is inherited from the host); ``source`` is
    bound read-only at ``/source``; ``egress`` routes HTTP(S) through the
    host's allow-list proxy (bwrap mode only)."""
    chosen = _choose_mode(mode)
    limits = limits or SandboxLimits()
    source_path = None if source is None else Path(source).resolve()
    if source_path is not None and not source_path.is_dir():
        raise SandboxError(f"sandbox source {source_path} is not a directory")
    if egress is not None and chosen != "bwrap":
        raise SandboxUnavailableError("egress through the proxy needs the bwrap mode")
    base_env = {"PATH": DEFAULT_PATH, **(env or {})}
    try:
        return await _start(chosen, limits, source_path, base_env, egress, on_event)
    except SandboxUnavailableError:
        if mode != "auto" or chosen != "bwrap" or egress is not None:
            raise
    # bwrap is installed but cannot run here (no user namespaces for this
    # user): the network-only mode, whose capabilities say exactly that.
    return await _start("netns", limits, source_path, base_env, None, None)


async def _start(
    chosen: Literal["bwrap", "netns"],
    limits: SandboxLimits,
    source_path: Path | None,
    base_env: dict[str, str],
    egress: EgressPolicy | None,
    on_event: EventSink | None,
) -> NativeSandbox:
    root = Path(tempfile.mkdtemp(prefix="prism-native-"))
    root.chmod(0o711)
    (root / "boot").mkdir(mode=0o755)
    shutil.copyfile(AGENT_SOURCE, root / "boot" / "agent.py")
    control = root / "control"
    control.mkdir(mode=0o700)
    uid = _UID_BASE + secrets.randbelow(1 << 24) if os.geteuid() == 0 else None
    if uid is not None and chosen == "bwrap":
        os.chown(control, uid, uid)
    proxy = None
    if egress is not None:
        proxy = EgressProxy(egress, str(control / "egress.sock"), on_event=on_event, owner=uid)
        base_env.update(proxy_env(EGRESS_PORT))
    workspace = "/workspace"
    if chosen == "bwrap":
        argv = bwrap_argv(
            root=root, uid=uid, limits=limits, source=source_path, egress=proxy is not None
        )
    else:
        workspace = str(root / "workspace")
        os.mkdir(workspace, 0o755)
        unshare = shutil.which("unshare")
        if unshare is None:
            shutil.rmtree(root, ignore_errors=True)
            raise SandboxUnavailableError("neither bwrap nor unshare is installed")
        netns = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--net", "--map-root-user"]
        argv = [*netns, "--", SANDBOX_PYTHON, "-I", "-S", str(root / "boot" / "agent.py")]
        argv += [f"--socket={control / 'agent.sock'}", rlimit_spec(limits, processes=False)]
        argv.append("--die-with-parent=1")
    sandbox = NativeSandbox(
        mode=chosen, root=root, limits=limits, env=base_env, workspace=workspace, proxy=proxy
    )
    try:
        await sandbox._launch(argv)
    except BaseException:
        await sandbox.close()
        raise
    return sandbox
