"""The host's side of the in-sandbox agent's socket (see ``_agent.py``).

One connection carries many concurrent requests; replies come back in any
order, matched by id. Whoever is waiting reads the next line and files it for
its owner, so no background task is needed.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from prism.sandbox.contract import SandboxClosedError, SandboxError

PROTOCOL_VERSION = 1
# An export travels as one base64 line; bounded by the export's own byte limit.
_MAX_LINE = 512 * 1024 * 1024


class AgentClient:
    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._reader = BufferedByteReceiveStream(stream)
        self._send_lock = anyio.Lock()
        self._receive_lock = anyio.Lock()
        self._replies: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._broken: str | None = None

    @classmethod
    async def connect(cls, path: str) -> AgentClient:
        try:
            stream = await anyio.connect_unix(path)
        except OSError as exc:
            raise SandboxClosedError(
                f"the sandbox agent is not reachable ({exc.strerror})"
            ) from exc
        client = cls(stream)
        hello = await client.call("hello")
        if hello.get("version") != PROTOCOL_VERSION:
            await client.aclose()
            raise SandboxError(
                f"sandbox agent speaks protocol {hello.get('version')!r}, expected {PROTOCOL_VERSION}"
            )
        return client

    async def call(self, op: str, **params: Any) -> dict[str, Any]:
        """Send one request and wait for its reply; a cancelled caller asks
        the agent to kill what the request started."""
        request_id = next(self._ids)
        line = json.dumps({"op": op, "id": request_id, **params}, separators=(",", ":"))
        try:
            async with self._send_lock:
                self._check()
                await self._stream.send(line.encode() + b"\n")
            reply = await self._wait_for(request_id)
        except anyio.get_cancelled_exc_class():
            if op == "exec" and self._broken is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.call("cancel", target=str(request_id))
            raise
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._broken = f"the sandbox agent connection broke ({type(exc).__name__})"
            raise SandboxClosedError(self._broken) from exc
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise SandboxError(
                str(error.get("message", "sandbox agent error")),
                code=str(error.get("code", "ERR_PRISM_SANDBOX")),
            )
        result: dict[str, Any] = reply.get("result") or {}
        return result

    async def _wait_for(self, request_id: int) -> dict[str, Any]:
        while request_id not in self._replies:
            async with self._receive_lock:
                if request_id in self._replies:
                    break
                self._check()
                try:
                    raw = await self._reader.receive_until(b"\n", _MAX_LINE)
                except anyio.IncompleteRead as exc:
                    self._broken = "the sandbox agent closed the connection"
                    raise SandboxClosedError(self._broken) from exc
                reply = json.loads(raw)
                self._replies[int(reply.get("id") or 0)] = reply
        return self._replies.pop(request_id)

    def _check(self) -> None:
        if self._broken is not None:
            raise SandboxClosedError(self._broken)

    async def aclose(self) -> None:
        self._broken = self._broken or "the sandbox agent connection is closed"
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()
