"""The sandbox contract: what every backend promises, its errors and limits.

Nothing here does I/O. A backend is anything that satisfies
:class:`DisposableSandbox`; the two built-in ones are the bubblewrap backend
(:mod:`prism.sandbox.native`) and the Docker backend (:mod:`prism.sandbox.docker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from prism._json_fields import write_json_fields
from prism.errors import PrismError

if TYPE_CHECKING:
    from prism.sandbox.processes import SandboxProcess

ERR_SANDBOX = "ERR_PRISM_SANDBOX"
ERR_SANDBOX_UNAVAILABLE = "ERR_PRISM_SANDBOX_UNAVAILABLE"
ERR_SANDBOX_CLOSED = "ERR_PRISM_SANDBOX_CLOSED"
ERR_SANDBOX_LIMIT = "ERR_PRISM_SANDBOX_LIMIT"
ERR_SANDBOX_PATH = "ERR_PRISM_SANDBOX_PATH"
ERR_SANDBOX_TAR_ENTRY = "ERR_PRISM_SANDBOX_TAR_ENTRY"
ERR_SANDBOX_EXPORT_LIMIT = "ERR_PRISM_SANDBOX_EXPORT_LIMIT"
ERR_PROCESS_UNSUPPORTED = "ERR_PRISM_PROCESS_UNSUPPORTED"
ERR_PROCESS_ATTACH = "ERR_PRISM_PROCESS_ATTACH"
ERR_EGRESS_POLICY = "ERR_PRISM_EGRESS_POLICY"

SandboxStatus = Literal["starting", "running", "stopped", "closed"]
"""``stopped``: the backend stopped it (stop/kill) or it died; ``closed``: closed by the host."""

LimitName = Literal[
    "timeout", "cancelled", "cpu_time", "memory", "processes", "file_size", "disk", "output"
]


class SandboxError(PrismError):
    """A sandbox operation failed; ``code`` is one of the stable ``ERR_PRISM_*`` codes."""

    code = ERR_SANDBOX


class SandboxUnavailableError(SandboxError):
    """The backend cannot run here (bwrap, user namespaces or the engine missing)."""

    code = ERR_SANDBOX_UNAVAILABLE


class SandboxClosedError(SandboxError):
    code = ERR_SANDBOX_CLOSED


class SandboxPathError(SandboxError, ValueError):
    """A path given to a sandbox operation leaves the workspace."""

    code = ERR_SANDBOX_PATH


class SandboxLimitError(SandboxError):
    """A command hit a sandbox limit; ``limit`` names which one."""

    code = ERR_SANDBOX_LIMIT

    def __init__(self, message: str, *, limit: str, **details: Any) -> None:
        super().__init__(message, limit=limit, **details)
        self.limit = limit


class ProcessUnsupportedError(SandboxError):
    """This sandbox cannot start or re-attach long-running processes."""

    code = ERR_PROCESS_UNSUPPORTED


@dataclass(frozen=True, slots=True)
class SandboxCapabilities:
    """What a sandbox actually isolates, decided from its configuration alone.

    Built once per sandbox with no I/O. ``workspace_coherent``: file
    operations and commands see the same workspace. ``egress_restricted``:
    the only way out is the host's allow-list proxy (or nothing at all).
    ``processes``: ``start_process`` works; ``reattach``: a process survives
    the host process and ``attach_process(ref)`` can find it again.
    """

    backend: str
    workspace_coherent: bool
    filesystem_isolated: bool
    network_isolated: bool
    process_isolated: bool
    privilege_isolated: bool
    egress_restricted: bool
    processes: bool = False
    reattach: bool = False

    @property
    def containment_claim(self) -> bool:
        """The reference's conservative projection, kept for compatibility:
        workspace, filesystem, network and process isolation all true
        (privilege isolation is not part of it). Never authorise anything
        from this one boolean; read the fields."""
        return (
            self.workspace_coherent
            and self.filesystem_isolated
            and self.network_isolated
            and self.process_isolated
        )

    def to_json(self) -> dict[str, Any]:
        return write_json_fields(
            self,
            "backend",
            "workspace_coherent",
            "filesystem_isolated",
            "network_isolated",
            "process_isolated",
            "privilege_isolated",
            "egress_restricted",
            "processes",
            "reattach",
            "containment_claim",
        )


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Per-sandbox limits. Each backend enforces the ones it can (see
    docs/sandboxes.md): the native backend with rlimits and a sized tmpfs,
    Docker with cgroups, a sized tmpfs and the same rlimits."""

    memory_bytes: int = 512 * 1024 * 1024
    cpu_seconds: int = 60
    max_processes: int = 128
    max_open_files: int = 256
    max_file_bytes: int = 256 * 1024 * 1024
    workspace_bytes: int = 256 * 1024 * 1024
    tmp_bytes: int = 64 * 1024 * 1024
    cpus: float = 1.0
    timeout: float = 60.0
    output_cap: int = 1024 * 1024

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise SandboxError(f"SandboxLimits.{name} must be a positive number, got {value!r}")


@dataclass(frozen=True, slots=True)
class ExecResult:
    """One finished command. ``exit_code`` is None when a signal ended it;
    ``limit`` names the sandbox limit the command hit, if any."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    limit: LimitName | None
    duration_ms: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.limit is None

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def raise_for_limit(self) -> ExecResult:
        """Raise :class:`SandboxLimitError` if a limit other than the output cap was hit."""
        if self.limit is not None and self.limit != "output":
            raise SandboxLimitError(
                f"the command hit the sandbox's {self.limit} limit", limit=self.limit
            )
        return self


@dataclass(frozen=True, slots=True)
class TarIdentity:
    """What a bounded workspace tar held: SHA-256 of the tar bytes, entries, file bytes."""

    sha256: str
    entries: int
    bytes: int


@runtime_checkable
class DisposableSandbox(Protocol):
    """One disposable sandbox. Paths are as commands inside see them."""

    @property
    def capabilities(self) -> SandboxCapabilities: ...

    @property
    def workspace(self) -> str: ...

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
    ) -> ExecResult: ...

    async def exec(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | str | None = None,
        output_cap: int | None = None,
    ) -> ExecResult: ...

    async def status(self) -> SandboxStatus: ...

    async def stop(self) -> None: ...

    async def kill(self) -> None: ...

    async def close(self) -> None: ...

    async def start_process(
        self,
        file: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        buffer_bytes: int | None = None,
    ) -> SandboxProcess: ...

    async def attach_process(self, ref: str) -> SandboxProcess: ...
