"""Process sessions and the model's tools for them.

``create_process_sessions(sandbox)`` keeps the handles a run started, by
id, and re-attaches by ``ref`` (fail closed: a ref from another sandbox, a
vanished process or a changed command is refused). A sandbox whose
capabilities say it cannot start processes fails at creation with
``ERR_PRISM_PROCESS_UNSUPPORTED``. ``create_process_tools`` wraps a session
set as four tools: ``process_start``, ``process_read``, ``process_write``,
``process_stop``.
"""

from __future__ import annotations

import signal as signals
from typing import Any

from prism.sandbox.contract import DisposableSandbox, ProcessUnsupportedError, SandboxError
from prism.sandbox.processes import SandboxProcess
from prism.tools import ToolContext, ToolDefinition, define_tool

_SIGNALS = {
    "TERM": signals.SIGTERM,
    "INT": signals.SIGINT,
    "KILL": signals.SIGKILL,
    "HUP": signals.SIGHUP,
}


class ProcessSessions:
    def __init__(self, sandbox: DisposableSandbox) -> None:
        if not sandbox.capabilities.processes:
            raise ProcessUnsupportedError(
                f"the {sandbox.capabilities.backend} sandbox cannot start long-running processes"
            )
        self.sandbox = sandbox
        self._handles: dict[str, SandboxProcess] = {}

    async def start(self, command: str, *, cwd: str | None = None) -> SandboxProcess:
        handle = await self.sandbox.start_process("/bin/sh", ["-c", command], cwd=cwd)
        self._handles[handle.id] = handle
        return handle

    async def attach(self, ref: str) -> SandboxProcess:
        handle = await self.sandbox.attach_process(ref)
        self._handles[handle.id] = handle
        return handle

    def get(self, process_id: str) -> SandboxProcess:
        handle = self._handles.get(process_id)
        if handle is None:
            raise SandboxError(
                f"no process {process_id!r} in this session", code="ERR_PRISM_PROCESS_NOT_FOUND"
            )
        return handle

    async def release(self, process_id: str) -> None:
        handle = self.get(process_id)
        await handle.release()
        del self._handles[process_id]

    async def release_all(self) -> None:
        for process_id in list(self._handles):
            try:
                await self.release(process_id)
            except SandboxError:
                self._handles.pop(process_id, None)


def create_process_sessions(sandbox: DisposableSandbox) -> ProcessSessions:
    return ProcessSessions(sandbox)


def create_process_tools(
    sessions: ProcessSessions, *, max_read_chars: int = 16_000
) -> list[ToolDefinition]:
    """The model's four process tools over one :class:`ProcessSessions`."""

    async def start(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if "ref" in args:
            handle = await sessions.attach(str(args["ref"]))
        else:
            handle = await sessions.start(str(args["command"]), cwd=args.get("cwd"))
        return {"id": handle.id, "ref": handle.ref}

    async def read(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        handle = sessions.get(str(args["id"]))
        if args.get("wait_seconds"):
            await handle.wait(float(args["wait_seconds"]))
        output = await handle.read()
        text = output.text
        clipped = len(text) > max_read_chars
        return {
            "output": text[-max_read_chars:] if clipped else text,
            "dropped": output.dropped or clipped,
            "running": output.running,
            "exitCode": output.exit_code,
            "signal": output.signal,
        }

    async def write(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        handle = sessions.get(str(args["id"]))
        await handle.write(str(args.get("data", "")), close=bool(args.get("close_stdin")))
        return {"written": len(str(args.get("data", "")))}

    async def stop(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        handle = sessions.get(str(args["id"]))
        state = await handle.signal(_SIGNALS[str(args.get("signal", "TERM"))])
        state = await handle.wait(float(args.get("grace_seconds", 2)))
        final = await handle.read()
        await sessions.release(handle.id)
        return {
            "output": final.text[-max_read_chars:],
            "exitCode": state.exit_code,
            "signal": state.signal,
            "killed": state.running,
        }

    handlers = {
        "process_start": start,
        "process_read": read,
        "process_write": write,
        "process_stop": stop,
    }
    return [
        define_tool(name, handlers[name], description=description, parameters=schema)
        for name, (description, schema) in _TOOL_SPECS.items()
    ]


def _object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False, **extra}


_PROCESS_ID = {"type": "string", "description": "the id process_start returned"}
_TOOL_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "process_start": (
        "Start a long-running shell command (dev server, watcher, REPL) in the sandbox, "
        "or re-attach one by its ref. Returns its id and ref.",
        _object(
            {
                "command": {"type": "string"},
                "cwd": {"type": "string"},
                "ref": {"type": "string", "description": "re-attach instead of starting"},
            },
            anyOf=[{"required": ["command"]}, {"required": ["ref"]}],
        ),
    ),
    "process_read": (
        "Read a process's new output (stdout and stderr interleaved) since the last read.",
        _object(
            {"id": _PROCESS_ID, "wait_seconds": {"type": "number", "minimum": 0, "maximum": 60}},
            required=["id"],
        ),
    ),
    "process_write": (
        "Write text to a process's stdin (include the newline); optionally close stdin.",
        _object(
            {"id": _PROCESS_ID, "data": {"type": "string"}, "close_stdin": {"type": "boolean"}},
            required=["id"],
        ),
    ),
    "process_stop": (
        "Signal a process (TERM by default), wait briefly, kill what is left and release it.",
        _object(
            {
                "id": _PROCESS_ID,
                "signal": {"enum": sorted(_SIGNALS)},
                "grace_seconds": {"type": "number", "minimum": 0, "maximum": 30},
            },
            required=["id"],
        ),
    ),
}
