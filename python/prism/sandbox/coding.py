"""The coding tools on a sandbox (docs/sandboxes.md, "Coding tools on a sandbox").

``create_sandbox_coding_tools(sandbox)`` builds the same read, write, edit,
git, shell, check and todo tools as ``prism.coding.create_coding_tools``, with
a :class:`SandboxWorkspaceBackend` underneath, plus search and list tools that
run inside the sandbox.

The coding tools and the execution policy check paths against host
directories (``os.path.realpath``), while the sandbox workspace (``/workspace``,
a tmpfs) exists only inside. So the composition creates an empty host
directory, the *view*, that stands for the workspace: the tools and the policy
see paths under the view, the backend maps each one to the same path under the
sandbox workspace and checks it again inside the sandbox, where symlinks are
(see ``_workspace_ops``). Nothing is ever written to the view.

The backend's file methods are synchronous (the tools call most of them from a
worker thread), the sandbox's agent is asynchronous: each file operation opens
its own short blocking connection to the agent's Unix socket and runs one
``python3 -c`` there. Commands go through the sandbox's ``exec_file`` as usual.
"""

from __future__ import annotations

import base64
import itertools
import json
import posixpath
import shutil
import socket
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from prism.coding.backend import ExecResult as CodingExecResult
from prism.coding.backend import FileStat
from prism.coding.check import CheckCommand
from prism.coding.plan import CodingState
from prism.coding.search import list_tool_over, search_tool_over
from prism.coding.tools import CodingToolSet, coding_tool_list
from prism.coding.workspace import (
    CodingEventHandler,
    CodingLimits,
    CodingToolError,
    CodingWorkspace,
    create_coding_workspace,
)
from prism.sandbox._workspace_ops import SOURCE
from prism.sandbox.base import DEFAULT_PATH, AgentSandbox
from prism.sandbox.contract import (
    SandboxCapabilities,
    SandboxClosedError,
    SandboxError,
    SandboxPathError,
)
from prism.security.execution import ExecutionPolicy
from prism.security.redaction import SecretRedactor, require_redactor
from prism.tools.definition import ToolDefinition

PYTHON = "/usr/bin/python3"
_OP_TIMEOUT = 60.0
_MISSING, _OUTSIDE, _OS_ERROR, _BAD_PATTERN = 2, 3, 4, 5
_ids = itertools.count(1)


class SandboxWorkspaceBackend:
    """prism.coding's ``WorkspaceBackend`` inside an agent-backed sandbox.

    ``view`` is the host directory the tools and the policy see; every path
    given here must be under it and is run as the same path under
    ``sandbox.workspace``. Paths outside the view: ``stat`` says missing (so
    a walk up to find ``.git`` stops at the workspace), the rest refuse."""

    def __init__(self, sandbox: AgentSandbox, view: str) -> None:
        if not isinstance(sandbox, AgentSandbox):
            raise SandboxError(
                "the coding backend needs an agent-backed sandbox "
                "(create_native_sandbox or create_docker_sandbox)"
            )
        self.sandbox = sandbox
        self.view = posixpath.normpath(view)
        self.workspace = posixpath.normpath(sandbox.workspace)
        self._socket = sandbox.agent_socket

    def inner(self, path: str) -> str | None:
        """``path`` (under the view) as the sandbox sees it, or None if outside."""
        full = posixpath.normpath(path)
        if full == self.view:
            return self.workspace
        if full.startswith(self.view + "/"):
            return self.workspace + full[len(self.view) :]
        return None

    def _checked(self, path: str) -> str:
        inner = self.inner(path)
        if inner is None:
            raise SandboxPathError(f"{path} is outside the sandbox workspace view {self.view}")
        return inner

    # -- the blocking bridge ----------------------------------------------------

    def run_op(self, op: str, args: Mapping[str, Any], stdin: bytes | None = None) -> bytes:
        """One file operation inside the sandbox; its stdout, or an OSError."""
        request = {
            "op": "exec",
            "id": next(_ids),
            "argv": [PYTHON, "-I", "-S", "-c", SOURCE, op, json.dumps(dict(args))],
            "cwd": self.workspace,
            "env": {"PATH": DEFAULT_PATH},
            "stdin": base64.b64encode(stdin).decode() if stdin else None,
            "timeout": _OP_TIMEOUT,
            "cap": int(args.get("max_bytes", 0)) + (8 << 20),
            "diskPaths": [self.workspace],
        }
        reply = self._call(request)
        stdout = base64.b64decode(reply.get("stdout") or "")
        stderr = base64.b64decode(reply.get("stderr") or "").decode("utf-8", "replace")
        code = reply.get("exitCode")
        where = str(args.get("path", ""))
        if code == 0:
            return stdout
        if code == _MISSING:
            raise FileNotFoundError(f"{where}: {stderr.strip() or 'not found'}")
        if code == _OUTSIDE:
            raise SandboxPathError(f"{where} resolves outside the sandbox workspace")
        if code == _BAD_PATTERN:
            raise CodingToolError(stderr.strip())
        raise OSError(f"{where}: {stderr.strip() or f'failed in the sandbox ({reply})'}")

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(_OP_TIMEOUT + 10)
                connection.connect(self._socket)
                connection.sendall(json.dumps(request).encode() + b"\n")
                with connection.makefile("rb") as reader:
                    line = reader.readline()
        except OSError as exc:
            raise SandboxClosedError(f"the sandbox agent is not reachable ({exc})") from exc
        if not line:
            raise SandboxClosedError("the sandbox agent closed the connection")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise SandboxError(str(error.get("message", "sandbox agent error")))
        result: dict[str, Any] = reply.get("result") or {}
        return result

    # -- WorkspaceBackend -------------------------------------------------------

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        return self.run_op(
            "read", {"root": self.workspace, "path": self._checked(path), "max_bytes": max_bytes}
        )

    def stat(self, path: str) -> FileStat | None:
        inner = self.inner(path)
        if inner is None:
            return None
        found = json.loads(self.run_op("stat", {"root": self.workspace, "path": inner}))
        return None if found is None else FileStat(**found)

    def write_atomic(self, path: str, data: bytes, mode: int | None) -> None:
        args = {"root": self.workspace, "path": self._checked(path), "mode": mode}
        self.run_op("write", args, stdin=data)

    def make_dirs(self, path: str) -> None:
        self.run_op("mkdirs", {"root": self.workspace, "path": self._checked(path)})

    def remove(self, path: str) -> None:
        self.run_op("remove", {"root": self.workspace, "path": self._checked(path)})

    async def exec_file(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float,
        output_cap: int,
        kill_after_bytes: int,
        stdin: bytes | None = None,
    ) -> CodingExecResult:
        """The command through the sandbox's ``exec_file``. An argument naming
        a path under the view names the same path in the sandbox. stdout and
        stderr come back separately, so ``output`` is stdout then stderr."""
        if not argv:
            raise SandboxError("exec_file needs a program")
        inner_argv = [self.inner(a) or a if a.startswith(self.view) else a for a in argv]
        started = time.perf_counter()
        result = await self.sandbox.exec_file(
            inner_argv[0],
            inner_argv[1:],
            cwd=self._checked(cwd),
            env=env,
            timeout=timeout,
            stdin=stdin,
            output_cap=output_cap,
        )
        output = result.stdout_text + result.stderr_text
        if result.stdout_truncated or result.stderr_truncated:
            output += f"\n[... output cut at {output_cap} bytes per stream ...]\n"
        timed_out = result.limit in ("timeout", "cancelled")
        return CodingExecResult(
            exit_code=None if timed_out else result.exit_code,
            output=output,
            output_bytes=len(result.stdout) + len(result.stderr),
            omitted_bytes=0,
            timed_out=timed_out,
            killed_for_output=False,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def sandbox_search_tool(
    ws: CodingWorkspace, backend: SandboxWorkspaceBackend, *, name: str = "search"
) -> ToolDefinition:
    """``search`` run inside the sandbox (Python ``re`` syntax, no .gitignore)."""

    async def find(directory: str, args: dict[str, Any]) -> Mapping[str, Any]:
        request = {
            "root": backend.workspace,
            "path": backend.inner(directory),
            "pattern": args["pattern"],
            "literal": bool(args.get("literal", False)),
            "ignore_case": bool(args.get("ignore_case", False)),
            "globs": list(args.get("glob", [])),
            "context": int(args.get("context", 0)),
            "hidden": bool(args.get("hidden", False)),
            "max_per_file": ws.limits.search_max_per_file,
            "max_total": ws.limits.search_max_total,
            "max_filesize": ws.limits.max_file_bytes,
        }
        found: Mapping[str, Any] = json.loads(
            await anyio.to_thread.run_sync(backend.run_op, "search", request)
        )
        return found

    return search_tool_over(
        ws,
        find,
        name=name,
        description=(
            "Search file contents (Python regex or literal) under a directory, skipping .git, "
            "dot-files and binary files, with glob filters and context lines; sorted, capped."
        ),
    )


def sandbox_list_tool(
    ws: CodingWorkspace, backend: SandboxWorkspaceBackend, *, name: str = "list"
) -> ToolDefinition:
    """``list`` run inside the sandbox (newest first, no .gitignore)."""

    async def find(directory: str, args: dict[str, Any]) -> tuple[Sequence[str], int, bool]:
        request = {
            "root": backend.workspace,
            "path": backend.inner(directory),
            "globs": list(args.get("glob", [])),
            "hidden": bool(args.get("hidden", False)),
            "max": ws.limits.list_max,
        }
        found = json.loads(await anyio.to_thread.run_sync(backend.run_op, "list", request))
        return found["files"], found["total"], found["truncated"]

    return list_tool_over(
        ws,
        find,
        name=name,
        description="List files under a directory by glob, newest first (skips .git, dot-files).",
    )


class SandboxCodingToolSet(CodingToolSet):
    """The tools, their workspace and plan state, the backend, and the
    sandbox's ``capabilities`` (the authority on what is isolated)."""

    def __init__(
        self,
        tools: Iterable[ToolDefinition],
        workspace: CodingWorkspace,
        state: CodingState,
        backend: SandboxWorkspaceBackend,
    ) -> None:
        super().__init__(tools, workspace, state)
        self.backend = backend
        self.capabilities: SandboxCapabilities = backend.sandbox.capabilities

    @property
    def view(self) -> str:
        """The host directory standing for the sandbox workspace (always empty)."""
        return self.backend.view


PolicyFactory = Callable[[str], ExecutionPolicy]


def create_sandbox_coding_tools(
    sandbox: AgentSandbox,
    *,
    execution_policy: PolicyFactory | None = None,
    limits: CodingLimits | None = None,
    redactor: SecretRedactor,
    on_event: CodingEventHandler | None = None,
    env: Mapping[str, str] | None = None,
    checks: Mapping[str, CheckCommand | Sequence[str]] | None = None,
    git_allow_destructive: Iterable[str] = (),
    plan_file: str | None = None,
    state: CodingState | None = None,
) -> SandboxCodingToolSet:
    """The coding tools with every file and process operation in ``sandbox``.

    ``execution_policy`` is a function of the workspace root the tools see
    (the host view) returning the policy, e.g. ``lambda root:
    create_execution_policy([root], rules, approve=...)``; without it the
    default policy applies (reads only). ``env`` is the commands' exact
    environment on top of the sandbox's own (default ``PATH`` only).
    """
    redactor = require_redactor(redactor, owner="create_sandbox_coding_tools")
    view = tempfile.mkdtemp(prefix="prism-sandbox-view-")
    backend = SandboxWorkspaceBackend(sandbox, str(Path(view).resolve()))
    weakref.finalize(backend, shutil.rmtree, view, True)
    policy = None if execution_policy is None else execution_policy(backend.view)
    workspace = create_coding_workspace(
        backend.view,
        execution_policy=policy,
        backend=backend,
        limits=limits,
        redactor=redactor,
        on_event=on_event,
        env=env,
    )
    plan_state = state if state is not None else CodingState()
    tools = coding_tool_list(
        workspace,
        plan_state,
        search=sandbox_search_tool(workspace, backend),
        listing=sandbox_list_tool(workspace, backend),
        checks=checks,
        git_allow_destructive=git_allow_destructive,
        plan_file=plan_file,
    )
    return SandboxCodingToolSet(tools, workspace, plan_state, backend)
