"""``shell``: run a command in the workspace, under the execution policy.

The model may give ``argv`` (run as is, no shell) or ``command`` (a string).
A string with no shell syntax is split into argv (``shlex``) and run
directly, so the policy's rules see the real program; a string using pipes,
redirections, ``;``, ``&&``, ``$``, globs and such runs as
``["bash", "-c", command]`` and the policy sees exactly that (a rule
allowing ``git`` does not allow ``git status; rm -rf ~``).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from typing import Any

from prism.coding.backend import ExecResult
from prism.coding.workspace import CodingToolError, CodingWorkspace
from prism.tools.definition import ToolContext, ToolDefinition

SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "A command line (bash syntax allowed)."},
        "argv": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "The program and its arguments, run without a shell.",
        },
        "cwd": {"type": "string", "description": "Working directory inside the workspace."},
        "timeout_ms": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}

_SHELL_SYNTAX = set("|&;<>()$`\\\"'*?[]{}~#\n!")
# Words only a shell understands: a string starting with one runs in bash.
_SHELL_WORDS = frozenset(
    "alias builtin case cd command declare eval exec exit export for function if "
    "local read return set shift source time trap type ulimit umask unset until wait "
    "while .".split()
)


def command_argv(args: dict[str, Any]) -> list[str]:
    """The argv a call runs (see the module docstring)."""
    has_argv = "argv" in args
    has_command = "command" in args
    if has_argv == has_command:
        raise CodingToolError("give exactly one of command or argv")
    if has_argv:
        argv = list(args["argv"])
        if any("\0" in part for part in argv):
            raise CodingToolError("argv holds a NUL byte")
        return argv
    command = args["command"]
    if not command.strip():
        raise CodingToolError("command is empty")
    if "\0" in command:
        raise CodingToolError("command holds a NUL byte")
    if any(ch in _SHELL_SYNTAX for ch in command):
        return ["bash", "-c", command]
    argv = shlex.split(command)
    if argv[0] in _SHELL_WORDS or "=" in argv[0]:
        return ["bash", "-c", command]
    return argv


def redact_argv(ws: CodingWorkspace, argv: Sequence[str]) -> list[str]:
    return [ws.redactor.redact_text(part) for part in argv]


async def run_command(
    ws: CodingWorkspace,
    ctx: ToolContext,
    tool: str,
    argv: Sequence[str],
    *,
    cwd: str | None,
    timeout: float,
) -> ExecResult:
    """Authorize (kind ``shell``), emit ``command_started``, run, emit
    ``command_finished``. Shared by shell, git and check."""
    real_cwd = str(ws.resolve(cwd)) if cwd is not None else ws.cwd
    info = ws.backend.stat(real_cwd)  # the backend's view: a sandbox's tree is not the host's
    if info is None or not info.is_dir:
        raise CodingToolError(f"cwd {ws.relative(real_cwd)!r} is not a directory")
    action = await ws.authorize("shell", ctx, tool, argv=argv, cwd=real_cwd)
    final_argv = list(action.argv) or list(argv)
    final_cwd = action.cwd or real_cwd
    shown = redact_argv(ws, final_argv)
    started: dict[str, Any] = {
        "type": "command_started",
        "argv": shown,
        "cwd": ws.relative(final_cwd),
    }
    if ctx.tool_call_id:
        started["toolCallId"] = ctx.tool_call_id
    await ws.emit(started, ctx)
    begun = time.perf_counter()
    try:
        result = await ws.backend.exec_file(
            final_argv,
            cwd=final_cwd,
            env=ws.env,
            timeout=timeout,
            output_cap=ws.limits.shell_output_cap,
            kill_after_bytes=ws.limits.shell_kill_after_bytes,
        )
    except (FileNotFoundError, PermissionError) as error:
        reason = "not found" if isinstance(error, FileNotFoundError) else "not executable"
        raise CodingToolError(f"program {shown[0]!r} {reason}") from None
    finished: dict[str, Any] = {
        "type": "command_finished",
        "argv": shown,
        "exitCode": result.exit_code,
        "timedOut": result.timed_out,
        "durationMs": round((time.perf_counter() - begun) * 1000, 3),
    }
    if ctx.tool_call_id:
        finished["toolCallId"] = ctx.tool_call_id
    await ws.emit(finished, ctx)
    return result


def describe_result(ws: CodingWorkspace, result: ExecResult, timeout: float) -> dict[str, Any]:
    value: dict[str, Any] = {
        "exit_code": result.exit_code,
        "output": ws.redactor.redact_text(result.output),
    }
    if result.omitted_bytes:
        value["omitted_bytes"] = result.omitted_bytes
    if result.timed_out:
        value["note"] = f"timed out after {timeout:g} s; the process group was killed"
    elif result.killed_for_output:
        value["note"] = (
            f"printed over {ws.limits.shell_kill_after_bytes} bytes; the process group was killed"
        )
    return value


def timeout_of(ws: CodingWorkspace, args: dict[str, Any]) -> float:
    limits = ws.limits
    if "timeout_ms" not in args:
        return limits.shell_default_timeout
    return min(float(args["timeout_ms"]) / 1000, limits.shell_max_timeout)


def shell_tool(ws: CodingWorkspace, *, name: str = "shell") -> ToolDefinition:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        argv = command_argv(args)
        timeout = timeout_of(ws, args)
        result = await run_command(ws, ctx, name, argv, cwd=args.get("cwd"), timeout=timeout)
        return describe_result(ws, result, timeout)

    return ToolDefinition(
        name,
        execute,
        description=(
            "Run a command in the workspace (no TTY, stdin closed, a clean environment). "
            "Output keeps its head and tail; a timeout kills the command and its children."
        ),
        parameters=SHELL_SCHEMA,
        exclusive=True,
    )
