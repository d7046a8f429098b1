"""File operations that run through a sandbox's ``exec_file``.

For tools written against a small filesystem protocol (read, write, stat,
list, remove, exec_file): plug these in and every operation happens inside
the sandbox, on the same workspace its commands see. Each operation checks
its path twice: lexically on the host (inside the workspace after
normalisation) and inside the sandbox after resolving symlinks (the deepest
existing ancestor must resolve inside the workspace), in the same command.
Works with any :class:`DisposableSandbox` that has ``sh``, ``cat``,
``readlink -f``, ``stat -c``, ``ls`` and ``rm`` (busybox or coreutils).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from prism.sandbox.contract import (
    DisposableSandbox,
    ExecResult,
    SandboxError,
    SandboxPathError,
)

_OUTSIDE = 97
_MISSING = 98
# $1: the path, $2: the workspace root. Stops with 97 when the deepest
# existing ancestor of $1 resolves outside $2 (a symlink pointing out).
_GUARD = (
    'p="$1"; while [ ! -e "$p" ] && [ ! -L "$p" ]; do p=$(dirname -- "$p"); done; '
    'r=$(readlink -f -- "$p") || exit 97; '
    'case "$r/" in "$2"/*) ;; *) echo "prism: $1 resolves outside the workspace" >&2; exit 97;; esac; '
)

EntryType = Literal["file", "directory", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class FileStat:
    type: EntryType
    size: int
    mode: int
    mtime: int


@dataclass(frozen=True, slots=True)
class DirEntry:
    name: str
    type: EntryType


def _entry_type(text: str) -> EntryType:
    if text.startswith("regular"):
        return "file"
    if text == "directory":
        return "directory"
    if text == "symbolic link":
        return "symlink"
    return "other"


class SandboxFilesystemOperations:
    """read/write/stat/list/remove and ``exec_file`` inside one sandbox."""

    def __init__(self, sandbox: DisposableSandbox, *, max_read_bytes: int = 8 * 1024 * 1024):
        self.sandbox = sandbox
        self.root = posixpath.normpath(sandbox.workspace)
        self.max_read_bytes = max_read_bytes

    def resolve(self, path: str) -> str:
        """``path`` (relative to the workspace, or absolute) checked lexically."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise SandboxPathError(f"invalid path {path!r}")
        full = posixpath.normpath(posixpath.join(self.root, path))
        if full != self.root and not full.startswith(self.root + "/"):
            raise SandboxPathError(f"{path} is outside the workspace {self.root}")
        return full

    async def _run(
        self, script: str, path: str, *, stdin: bytes | None = None, cap: int | None = None
    ) -> tuple[str, ExecResult]:
        full = self.resolve(path)
        result = await self.sandbox.exec_file(
            "/bin/sh", ["-c", _GUARD + script, "sh", full, self.root], stdin=stdin, output_cap=cap
        )
        if result.exit_code == _OUTSIDE:
            raise SandboxPathError(f"{path} resolves outside the workspace {self.root}")
        if result.exit_code == _MISSING:
            raise FileNotFoundError(path)
        if result.exit_code != 0:
            raise SandboxError(f"{path}: {result.stderr_text.strip() or 'failed'}")
        return full, result

    async def read_file(self, path: str) -> bytes:
        script = '[ -f "$1" ] || exit 98; exec cat -- "$1"'
        _, result = await self._run(script, path, cap=self.max_read_bytes)
        if result.stdout_truncated:
            raise SandboxError(f"{path} is larger than {self.max_read_bytes} bytes")
        return result.stdout

    async def write_file(self, path: str, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        script = 'mkdir -p -- "$(dirname -- "$1")" && [ ! -L "$1" ] && cat > "$1"'
        await self._run(script, path, stdin=raw)

    async def stat(self, path: str) -> FileStat | None:
        script = '[ -e "$1" ] || [ -L "$1" ] || exit 98; exec stat -c "%F|%s|%a|%Y" -- "$1"'
        try:
            _, result = await self._run(script, path)
        except FileNotFoundError:
            return None
        kind, size, mode, mtime = result.stdout_text.strip().rsplit("|", 3)
        return FileStat(_entry_type(kind), int(size), int(mode, 8), int(mtime))

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        script = '[ -d "$1" ] || exit 98; cd -- "$1" || exit 1; for f in * .*; do '
        script += (
            'case "$f" in .|..) continue;; esac; { [ -e "$f" ] || [ -L "$f" ]; } || continue; '
        )
        script += 'printf "%s|%s\\n" "$(stat -c %F -- "$f")" "$f"; done; exit 0'
        _, result = await self._run(script, path)
        entries = []
        for line in result.stdout_text.splitlines():
            kind, _, name = line.partition("|")
            if name:
                entries.append(DirEntry(name, _entry_type(kind)))
        return sorted(entries, key=lambda e: e.name)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        if self.resolve(path) == self.root:
            raise SandboxPathError("refusing to remove the workspace itself")
        script = '[ -e "$1" ] || [ -L "$1" ] || exit 98; exec rm ' + ("-rf" if recursive else "-f")
        await self._run(script + ' -- "$1"', path)

    async def exec_file(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | str | None = None,
        output_cap: int | None = None,
    ) -> ExecResult:
        """The coding tools' process call, with ``cwd`` checked like any path."""
        if not argv:
            raise SandboxError("exec_file needs a program")
        return await self.sandbox.exec_file(
            argv[0],
            list(argv[1:]),
            cwd=self.resolve(cwd or "."),
            env=env,
            timeout=timeout,
            stdin=stdin,
            output_cap=output_cap,
        )


def create_sandbox_filesystem_operations(
    sandbox: DisposableSandbox, *, max_read_bytes: int = 8 * 1024 * 1024
) -> SandboxFilesystemOperations:
    return SandboxFilesystemOperations(sandbox, max_read_bytes=max_read_bytes)
