"""What both built-in backends share: commands, processes and the workspace
tar all go through the in-sandbox agent; a backend only launches, stops and
kills the thing the agent runs in."""

from __future__ import annotations

import base64
import shlex
import signal as signals
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from prism.sandbox.client import AgentClient
from prism.sandbox.contract import (
    ERR_PROCESS_ATTACH,
    ExecResult,
    LimitName,
    SandboxCapabilities,
    SandboxClosedError,
    SandboxError,
    SandboxLimits,
    SandboxStatus,
    TarIdentity,
)
from prism.sandbox.processes import ProcessRef, SandboxProcess
from prism.sandbox.tar import build_tar, read_tar_entries

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

_FORK_FAILED = (b"Cannot fork", b"can't fork", b"Resource temporarily unavailable")
_NO_MEMORY = (b"Cannot allocate memory", b"MemoryError", b"out of memory", b"Out of memory")
_NO_SPACE = (b"No space left on device",)


def classify_limit(
    reply: Mapping[str, Any], stderr: bytes, *, killed_by_oom: bool = False
) -> LimitName | None:
    """Which limit a command hit, from what the kernel and the agent report.

    The agent names deadlines and cancellations; signals name CPU time and
    file size; the engine names an OOM kill. Fork, memory and disk failures
    reach a command as errno strings (EAGAIN, ENOMEM, ENOSPC), so those three
    are read from the end of stderr: a command that prints the same words
    without failing is reported the same way.
    """
    tail = stderr[-4096:]
    forked_out = any(word in tail for word in _FORK_FAILED)
    if reply.get("limit"):
        # A fork bomb runs into the process limit, then into its deadline:
        # the process limit is the one that contained it.
        limit: LimitName = "processes" if forked_out else reply["limit"]
        return limit
    sig = reply.get("signal")
    if sig == signals.SIGXCPU:
        return "cpu_time"
    if sig == signals.SIGXFSZ:
        return "file_size"
    if sig == signals.SIGKILL and killed_by_oom:
        return "memory"
    if forked_out:
        return "processes"
    if reply.get("exitCode") in (0, None) and sig is None:
        return "output" if reply.get("stdoutTruncated") or reply.get("stderrTruncated") else None
    if reply.get("diskFull"):
        return "disk"
    for words, name in ((_FORK_FAILED, "processes"), (_NO_MEMORY, "memory"), (_NO_SPACE, "disk")):
        if any(word in tail for word in words):
            found: LimitName = name  # type: ignore[assignment]
            return found
    if killed_by_oom:
        return "memory"
    return "output" if reply.get("stdoutTruncated") or reply.get("stderrTruncated") else None


class AgentSandbox(ABC):
    """A :class:`~prism.sandbox.contract.DisposableSandbox` backed by the agent."""

    backend: str = "agent"
    _root: Path  # the host directory holding ``control/agent.sock`` (set by each backend)

    def __init__(
        self,
        *,
        sandbox_id: str,
        workspace: str,
        limits: SandboxLimits,
        capabilities: SandboxCapabilities,
        base_env: Mapping[str, str],
    ) -> None:
        self.sandbox_id = sandbox_id
        self._workspace = workspace
        self.limits = limits
        self._capabilities = capabilities
        self._base_env = dict(base_env)
        self._client: AgentClient | None = None
        self._state: SandboxStatus = "starting"
        self._close_lock = anyio.Lock()
        self.last_export_identity: TarIdentity | None = None
        self.import_identity: TarIdentity | None = None

    @property
    def capabilities(self) -> SandboxCapabilities:
        return self._capabilities

    @property
    def workspace(self) -> str:
        return self._workspace

    @property
    def agent_socket(self) -> str:
        """The host path of the in-sandbox agent's Unix socket (one JSON
        request per line; any number of connections)."""
        return str(self._root / "control" / "agent.sock")

    # -- what a backend provides ------------------------------------------------

    @abstractmethod
    async def _terminate(self, *, force: bool) -> None:
        """Stop (or kill) whatever the agent runs in."""

    async def _oom_kills(self) -> int:
        """How many OOM kills the sandbox has seen (0 where unknown)."""
        return 0

    async def _alive(self) -> bool:
        return self._state == "running"

    # -- commands ---------------------------------------------------------------

    def _agent(self) -> AgentClient:
        if self._client is None or self._state != "running":
            raise SandboxClosedError(f"the {self.backend} sandbox is {self._state}")
        return self._client

    def _command_env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        merged = dict(self._base_env)
        if env:
            merged.update({str(k): str(v) for k, v in env.items()})
        return merged

    async def exec_file(
        self,
        file: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | str | None = None,
        output_cap: int | None = None,
    ) -> ExecResult:
        if not isinstance(file, str) or not file:
            raise SandboxError("exec_file needs a program name")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise SandboxError("exec_file args must be a sequence of strings, not one string")
        data = stdin.encode() if isinstance(stdin, str) else stdin
        agent = self._agent()
        oom_before = await self._oom_kills()
        started = time.perf_counter()
        reply = await agent.call(
            "exec",
            argv=[file, *args],
            cwd=cwd or self._workspace,
            env=self._command_env(env),
            stdin=base64.b64encode(data).decode() if data else None,
            timeout=self.limits.timeout if timeout is None else timeout,
            cap=self.limits.output_cap if output_cap is None else output_cap,
            diskPaths=[self._workspace, "/tmp"],
        )
        elapsed = (time.perf_counter() - started) * 1000
        stdout = base64.b64decode(reply.get("stdout") or "")
        stderr = base64.b64decode(reply.get("stderr") or "")
        oom = reply.get("signal") == signals.SIGKILL and await self._oom_kills() > oom_before
        return ExecResult(
            exit_code=reply.get("exitCode"),
            signal=reply.get("signal"),
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=bool(reply.get("stdoutTruncated")),
            stderr_truncated=bool(reply.get("stderrTruncated")),
            limit=classify_limit(reply, stderr, killed_by_oom=oom),
            duration_ms=elapsed,
        )

    async def exec(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | str | None = None,
        output_cap: int | None = None,
    ) -> ExecResult:
        """``sh -c command``: shell syntax for hosts that have a command line."""
        return await self.exec_file(
            "/bin/sh",
            ["-c", command],
            cwd=cwd,
            env=env,
            timeout=timeout,
            stdin=stdin,
            output_cap=output_cap,
        )

    # -- processes --------------------------------------------------------------

    async def start_process(
        self,
        file: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        buffer_bytes: int | None = None,
    ) -> SandboxProcess:
        info = await self._agent().call(
            "start",
            argv=[file, *args],
            cwd=cwd or self._workspace,
            env=self._command_env(env),
            buffer=buffer_bytes or self.limits.output_cap,
        )
        return self._process_handle(info)

    def _process_handle(self, info: Mapping[str, Any]) -> SandboxProcess:
        ref = ProcessRef(
            backend=self.backend,
            sandbox_id=self.sandbox_id,
            workspace=self._workspace,
            proc=str(info["proc"]),
            fingerprint=str(info["fingerprint"]),
        )
        return SandboxProcess(self._agent(), ref, list(info["argv"]))

    async def attach_process(self, ref: str) -> SandboxProcess:
        """Find a process again from its ``ref``: the backend, sandbox,
        workspace and command fingerprint must all match, or this fails."""
        parsed = ProcessRef.decode(ref)
        expected = (self.backend, self.sandbox_id, self._workspace)
        if (parsed.backend, parsed.sandbox_id, parsed.workspace) != expected:
            raise SandboxError(
                "the process ref belongs to another sandbox "
                f"({parsed.backend} {parsed.sandbox_id[:12]}, workspace {parsed.workspace})",
                code=ERR_PROCESS_ATTACH,
            )
        try:
            info = await self._agent().call("describe", proc=parsed.proc)
        except SandboxError as exc:
            raise SandboxError(
                f"process {parsed.proc} is gone from this sandbox", code=ERR_PROCESS_ATTACH
            ) from exc
        if info.get("fingerprint") != parsed.fingerprint:
            raise SandboxError(
                "the process ref's command fingerprint does not match", code=ERR_PROCESS_ATTACH
            )
        return self._process_handle(info)

    # -- workspace tar ----------------------------------------------------------

    async def import_tar(self, data: bytes, *, max_bytes: int | None = None) -> TarIdentity:
        """Unpack a workspace tar after checking every entry (no absolute or
        ``..`` paths, no links, devices, fifos or setuid bits, bounded size)."""
        bound = max_bytes or self.limits.workspace_bytes
        entries, identity = read_tar_entries(data, max_bytes=bound)
        await self._agent().call("import", root=self._workspace, entries=entries)
        self.import_identity = identity
        return identity

    async def export_tar(
        self, *, max_bytes: int | None = None, max_entries: int = 100_000
    ) -> tuple[bytes, TarIdentity]:
        """The workspace as a tar plus its SHA-256 identity. A symlink, device
        or setuid file anywhere in the workspace refuses the export."""
        bound = max_bytes or self.limits.workspace_bytes
        reply = await self._agent().call(
            "export", root=self._workspace, maxBytes=bound, maxEntries=max_entries
        )
        data, identity = build_tar(reply["entries"], max_bytes=bound)
        self.last_export_identity = identity
        return data, identity

    # -- lifecycle --------------------------------------------------------------

    async def status(self) -> SandboxStatus:
        if self._state == "running" and not await self._alive():
            self._state = "stopped"
        return self._state

    async def stop(self) -> None:
        """Kill every command and process, then stop the sandbox cooperatively."""
        await self._shutdown(force=False, final="stopped")

    async def kill(self) -> None:
        await self._shutdown(force=True, final="stopped")

    async def close(self) -> None:
        """Kill everything and free the sandbox; a second close does nothing."""
        await self._shutdown(force=True, final="closed")

    async def _shutdown(self, *, force: bool, final: SandboxStatus) -> None:
        with anyio.CancelScope(shield=True):
            async with self._close_lock:
                if self._state == "closed":
                    return
                client, self._client = self._client, None
                if client is not None:
                    if not force:
                        with anyio.move_on_after(5):
                            try:
                                await client.call("killall")
                            except SandboxError:
                                pass
                    await client.aclose()
                await self._terminate(force=force)
                self._state = final

    async def __aenter__(self) -> AgentSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
