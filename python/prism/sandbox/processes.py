"""Long-running processes in a sandbox: stdin, a bounded output ring buffer,
signals, wait, release, and an opaque ``ref`` to find them again."""

from __future__ import annotations

import base64
import binascii
import json
import signal as signals
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prism.sandbox.contract import ERR_PROCESS_ATTACH, SandboxError

if TYPE_CHECKING:
    from prism.sandbox.client import AgentClient

REF_PREFIX = "prism-proc:"


@dataclass(frozen=True, slots=True)
class ProcessRef:
    """What a ``ref`` attests: which backend and sandbox, which workspace,
    which process and a SHA-256 of its argv and cwd."""

    backend: str
    sandbox_id: str
    workspace: str
    proc: str
    fingerprint: str

    def encode(self) -> str:
        blob = json.dumps(
            {
                "v": 1,
                "backend": self.backend,
                "sandbox": self.sandbox_id,
                "workspace": self.workspace,
                "proc": self.proc,
                "fingerprint": self.fingerprint,
            },
            separators=(",", ":"),
            sort_keys=True,
        )
        return REF_PREFIX + base64.urlsafe_b64encode(blob.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, ref: str) -> ProcessRef:
        if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
            raise SandboxError(
                f"not a process ref (expected {REF_PREFIX}...)", code=ERR_PROCESS_ATTACH
            )
        body = ref[len(REF_PREFIX) :]
        try:
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            if data.get("v") != 1:
                raise ValueError("version")
            return cls(
                backend=str(data["backend"]),
                sandbox_id=str(data["sandbox"]),
                workspace=str(data["workspace"]),
                proc=str(data["proc"]),
                fingerprint=str(data["fingerprint"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
            raise SandboxError("the process ref is malformed", code=ERR_PROCESS_ATTACH) from exc


@dataclass(frozen=True, slots=True)
class ProcessOutput:
    """Output read from the ring buffer since the caller's ``offset``.
    ``dropped``: the buffer wrapped and some output was lost before it."""

    data: bytes
    offset: int
    dropped: bool
    running: bool
    exit_code: int | None
    signal: int | None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class ProcessState:
    running: bool
    exit_code: int | None
    signal: int | None


def _state(reply: dict[str, object]) -> ProcessState:
    exit_code = reply.get("exitCode")
    sig = reply.get("signal")
    return ProcessState(
        running=bool(reply.get("running")),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        signal=sig if isinstance(sig, int) else None,
    )


class SandboxProcess:
    """A handle on one process; stdout and stderr share one ring buffer."""

    def __init__(self, client: AgentClient, ref: ProcessRef, argv: list[str]) -> None:
        self._client = client
        self._ref = ref
        self.argv = argv
        self.offset = 0

    @property
    def ref(self) -> str:
        """Opaque; hand it to ``sandbox.attach_process`` to find this process again."""
        return self._ref.encode()

    @property
    def id(self) -> str:
        return self._ref.proc

    async def write(self, data: bytes | str, *, close: bool = False) -> None:
        raw = data.encode() if isinstance(data, str) else data
        await self._client.call(
            "write", proc=self._ref.proc, data=base64.b64encode(raw).decode(), close=close
        )

    async def close_stdin(self) -> None:
        await self.write(b"", close=True)

    async def read(self, *, since: int | None = None) -> ProcessOutput:
        """Output after ``since`` (default: where the last read stopped)."""
        reply = await self._client.call(
            "read", proc=self._ref.proc, since=self.offset if since is None else since
        )
        self.offset = int(reply["offset"])
        state = _state(reply)
        return ProcessOutput(
            data=base64.b64decode(reply.get("data") or ""),
            offset=self.offset,
            dropped=bool(reply.get("dropped")),
            running=state.running,
            exit_code=state.exit_code,
            signal=state.signal,
        )

    async def signal(self, number: int = signals.SIGTERM) -> ProcessState:
        return _state(await self._client.call("signal", proc=self._ref.proc, signal=int(number)))

    async def kill(self) -> ProcessState:
        """SIGKILL to the process and everything it started."""
        return await self.signal(signals.SIGKILL)

    async def wait(self, timeout: float | None = None) -> ProcessState:
        """Wait for it to exit (at most ``timeout`` seconds); returns its state either way."""
        return _state(await self._client.call("wait", proc=self._ref.proc, timeout=timeout))

    async def release(self) -> ProcessState:
        """Kill it if still running and forget it; its ref stops working."""
        return _state(await self._client.call("release", proc=self._ref.proc))
