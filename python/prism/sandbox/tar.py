"""Bounded workspace tars: only regular files and directories, relative paths
that stay inside, no setuid bits, a byte and entry bound, SHA-256 identity.

Both directions check every entry: an imported tar comes from the host's
caller, an export's entries come from inside the sandbox. Nothing is written
before the whole tar has been checked.
"""

from __future__ import annotations

import base64
import hashlib
import io
import posixpath
import stat
import tarfile
from collections.abc import Sequence
from typing import Any

from prism.sandbox.contract import (
    ERR_SANDBOX_EXPORT_LIMIT,
    ERR_SANDBOX_TAR_ENTRY,
    SandboxError,
    TarIdentity,
)

MAX_ENTRIES = 100_000


def _refuse(name: str, why: str) -> SandboxError:
    return SandboxError(f"tar entry {name!r} refused: {why}", code=ERR_SANDBOX_TAR_ENTRY)


def safe_relative_path(name: str) -> str:
    """``name`` as a normalised relative path, or an error if it could leave the root."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise _refuse(str(name), "empty or NUL in the name")
    if name.startswith("/") or name.startswith("\\"):
        raise _refuse(name, "absolute path")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise _refuse(name, "'..' leaves the workspace")
    normal = posixpath.normpath(name)
    if normal in ("", "."):
        raise _refuse(name, "names the workspace itself")
    return normal


def _mode(value: int, name: str) -> int:
    if value & (stat.S_ISUID | stat.S_ISGID):
        raise _refuse(name, "setuid/setgid bit")
    return value & 0o777


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hard link"
    if member.isfifo():
        return "fifo"
    if member.ischr() or member.isblk():
        return "device node"
    return "special entry"


def read_tar_entries(data: bytes, *, max_bytes: int) -> tuple[list[dict[str, Any]], TarIdentity]:
    """Check a tar and return its entries in the agent's import form."""
    if len(data) > max_bytes * 2 + 1024 * 1024:
        raise SandboxError(
            f"the tar is {len(data)} bytes, over the {max_bytes}-byte bound",
            code=ERR_SANDBOX_EXPORT_LIMIT,
        )
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except tarfile.TarError as exc:
        raise SandboxError(f"not a readable tar: {exc}", code=ERR_SANDBOX_TAR_ENTRY) from exc
    entries: list[dict[str, Any]] = []
    total = 0
    with archive:
        for member in archive:
            path = safe_relative_path(member.name)
            if member.isdir():
                entries.append({"path": path, "type": "dir", "mode": _mode(member.mode, path)})
                continue
            if not member.isfile():
                kind = _kind(member)
                raise _refuse(member.name, kind)
            total += member.size
            if total > max_bytes or len(entries) >= MAX_ENTRIES:
                raise SandboxError(
                    f"the tar holds more than {max_bytes} bytes or {MAX_ENTRIES} entries",
                    code=ERR_SANDBOX_EXPORT_LIMIT,
                )
            handle = archive.extractfile(member)
            content = b"" if handle is None else handle.read()
            entries.append(
                {
                    "path": path,
                    "type": "file",
                    "mode": _mode(member.mode, path),
                    "data": base64.b64encode(content).decode(),
                }
            )
    identity = TarIdentity(hashlib.sha256(data).hexdigest(), len(entries), total)
    return entries, identity


def build_tar(entries: Sequence[dict[str, Any]], *, max_bytes: int) -> tuple[bytes, TarIdentity]:
    """A deterministic tar (sorted, zeroed times and owners) from the agent's
    export entries, each checked again here."""
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for entry in sorted(entries, key=lambda e: str(e.get("path"))):
            path = safe_relative_path(str(entry.get("path")))
            info = tarfile.TarInfo(path)
            info.mode = _mode(int(entry.get("mode", 0o644)), path)
            info.mtime = 0
            if entry.get("type") == "dir":
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
                continue
            if entry.get("type") != "file":
                raise _refuse(path, f"type {entry.get('type')!r}")
            content = base64.b64decode(entry.get("data") or "")
            total += len(content)
            if total > max_bytes:
                raise SandboxError(
                    f"the workspace holds more than {max_bytes} bytes",
                    code=ERR_SANDBOX_EXPORT_LIMIT,
                )
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    data = buffer.getvalue()
    return data, TarIdentity(hashlib.sha256(data).hexdigest(), len(entries), total)
