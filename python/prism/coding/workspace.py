"""What every coding tool shares: roots, policy, backend, limits, the read
ledger (stale-read guard) and the lifecycle-event callback."""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prism.coding.backend import FileStat, LocalBackend, WorkspaceBackend
from prism.errors import ExecutionDeniedError
from prism.security.execution import (
    ExecutionAction,
    ExecutionKind,
    ExecutionPolicy,
    authorize,
    create_execution_policy,
)
from prism.security.redaction import SecretRedactor, require_redactor
from prism.security.roots import assert_path_inside_roots, relative_to_roots
from prism.tools.definition import ToolContext

CodingEventHandler = Callable[[dict[str, Any]], "Awaitable[None] | None"]
"""Receives ``file_changed``, ``command_started``, ``command_finished`` and
``plan_changed`` events (plain dicts, see docs/coding.md), besides the run's
event stream, which gets them through ``ToolContext.emit``."""

PROTECTED_DIRS = frozenset({".git"})


class CodingToolError(Exception):
    """A coding tool refused or failed; the message is what the model sees."""


@dataclass(frozen=True, slots=True)
class CodingLimits:
    """Caps every tool keeps (docs/coding.md says why each is where it is)."""

    read_max_lines: int = 2000
    read_max_line_chars: int = 2000
    read_max_output_bytes: int = 256 * 1024
    max_file_bytes: int = 16 * 1024 * 1024
    read_max_image_bytes: int = 3_750_000
    search_max_per_file: int = 50
    search_max_total: int = 500
    list_max: int = 1000
    shell_default_timeout: float = 120.0
    shell_max_timeout: float = 600.0
    shell_output_cap: int = 30_000
    shell_kill_after_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _ReadMark:
    size: int
    mtime_ns: int
    inode: int


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class CodingWorkspace:
    """Shared by the tools ``create_coding_tools`` builds. Build one with
    ``create_coding_workspace`` to give several single tools one ledger."""

    cwd: str
    policy: ExecutionPolicy
    backend: WorkspaceBackend
    limits: CodingLimits
    redactor: SecretRedactor
    on_event: CodingEventHandler | None
    env: Mapping[str, str]
    _reads: dict[tuple[str | None, str], _ReadMark] = field(default_factory=dict)

    @property
    def roots(self) -> tuple[str, ...]:
        return self.policy.roots

    def resolve(self, path: object) -> Path:
        """A path inside the roots (relative ones from ``cwd``), else a refusal."""
        return assert_path_inside_roots(path, self.roots, cwd=self.cwd)  # type: ignore[arg-type]

    def relative(self, path: str | Path) -> str:
        return relative_to_roots(path, self.roots)

    def refuse_protected(self, real: Path) -> None:
        rel = Path(self.relative(real))
        if any(part in PROTECTED_DIRS for part in rel.parts):
            raise ExecutionDeniedError(
                f"{self.relative(real)!r} is inside .git/; change a repository through the git tool"
            )

    async def authorize(
        self,
        kind: ExecutionKind,
        ctx: ToolContext,
        tool: str,
        *,
        paths: Sequence[str] = (),
        argv: Sequence[str] = (),
        cwd: str | None = None,
    ) -> ExecutionAction:
        """Ask the policy, then check the (possibly changed) action's paths
        against the roots again: a custom policy's changes are not trusted."""
        action = ExecutionAction(
            kind,
            paths=tuple(paths),
            argv=tuple(argv),
            cwd=cwd,
            tool_name=tool,
            tool_call_id=ctx.tool_call_id,
        )
        final = await authorize(self.policy, action, redactor=self.redactor)
        if final is not action:
            resolved = tuple(str(self.resolve(p)) for p in final.paths)
            new_cwd = None if final.cwd is None else str(self.resolve(final.cwd))
            final = ExecutionAction(
                final.kind,
                paths=resolved,
                argv=final.argv,
                cwd=new_cwd,
                tool_name=tool,
                tool_call_id=ctx.tool_call_id,
            )
        return final

    # --- stale-read guard -------------------------------------------------------

    def mark_read(self, ctx: ToolContext, path: str, info: FileStat) -> None:
        self._reads[(ctx.session_id, path)] = _ReadMark(info.size, info.mtime_ns, info.inode)

    def check_fresh(self, ctx: ToolContext, path: str, info: FileStat) -> None:
        mark = self._reads.get((ctx.session_id, path))
        rel = self.relative(path)
        if mark is None:
            raise CodingToolError(
                f"{rel!r} exists and has not been read in this session; read it first"
            )
        if (mark.size, mark.mtime_ns, mark.inode) != (info.size, info.mtime_ns, info.inode):
            raise CodingToolError(
                f"{rel!r} changed on disk since it was read; read it again before changing it"
            )

    # --- events -----------------------------------------------------------------

    async def emit(self, event: dict[str, Any], ctx: ToolContext | None = None) -> None:
        """Into the run's event stream (``ctx.emit``: redacted, in order,
        in ``--mode json``), and to ``on_event`` when the host passed one."""
        if ctx is not None:
            ctx.emit(event)
        if self.on_event is None:
            return
        outcome = self.on_event(event)
        if inspect.isawaitable(outcome):
            await outcome

    async def file_changed(
        self, ctx: ToolContext, path: str, kind: str, data: bytes | None
    ) -> None:
        event: dict[str, Any] = {"type": "file_changed", "path": self.relative(path), "kind": kind}
        if data is not None:
            event["bytes"] = len(data)
            event["digest"] = digest_of(data)
        if ctx.tool_call_id:
            event["toolCallId"] = ctx.tool_call_id
        await self.emit(event, ctx)


DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def create_coding_workspace(
    cwd: str | os.PathLike[str],
    *,
    execution_policy: ExecutionPolicy | None = None,
    backend: WorkspaceBackend | None = None,
    limits: CodingLimits | None = None,
    redactor: SecretRedactor,
    on_event: CodingEventHandler | None = None,
    env: Mapping[str, str] | None = None,
    inherit_env: Sequence[str] = (),
) -> CodingWorkspace:
    """The shared state of a tool set. Without ``execution_policy`` the
    default one is used: roots ``[cwd]``, no rules, no approver (reads only).

    ``env`` is the exact environment commands get (default: ``PATH`` only);
    ``inherit_env`` names variables copied from this process's environment
    on top. Nothing else is inherited, so a host's secrets stay out of
    commands unless named.
    """
    redactor = require_redactor(redactor, owner="create_coding_workspace")
    policy = execution_policy or create_execution_policy([cwd], redactor=redactor)
    real_cwd = str(assert_path_inside_roots(os.fspath(cwd), policy.roots, allow_hard_links=True))
    command_env = dict(env) if env is not None else {"PATH": DEFAULT_PATH}
    for name in inherit_env:
        if name in os.environ:
            command_env[name] = os.environ[name]
    return CodingWorkspace(
        cwd=real_cwd,
        policy=policy,
        backend=backend or LocalBackend(),
        limits=limits or CodingLimits(),
        redactor=redactor,
        on_event=on_event,
        env=command_env,
    )
