"""Workspace roots: is a path inside them, after every symlink is followed?

``assert_path_inside_roots`` is the one check every coding tool and the
execution policy make before touching a path. It works on the *resolved*
path (``os.path.realpath``: each existing component's symlinks followed,
``..`` applied after that), so ``..``, absolute paths, symlinks (also
dangling ones and ones in a parent directory), ``/proc/self/root/...`` and
case variants of a root on a case-sensitive file system all end up compared
as what the kernel would open. A regular file with more than one hard link
is refused too: a link inside the roots may share its inode with a file
outside them, and nothing on the path says so.

What it cannot do (docs/coding.md, threat model): a process racing the
check (swapping a directory for a symlink between the check and the open)
is only narrowed, not closed, by the ``O_NOFOLLOW`` open the local backend
uses; a sandbox closes it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from prism.errors import ExecutionDeniedError

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def _describe_roots(roots: Sequence[str]) -> str:
    return ", ".join(roots) if roots else "(none)"


def normalize_roots(roots: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Each root resolved once (symlinks followed); a root must be an existing
    directory given as text. Raises ``ValueError`` naming the bad root."""
    resolved: list[str] = []
    for root in roots:
        if isinstance(root, bytes) or not isinstance(root, (str, os.PathLike)):
            raise ValueError(f"a root must be a text path, got {type(root).__name__}")
        text = os.fspath(root)
        if not isinstance(text, str) or not text or "\0" in text:
            raise ValueError(f"a root must be a non-empty text path without NUL: {text!r}")
        real = os.path.realpath(text)
        if not os.path.isdir(real):
            raise ValueError(f"root {text!r} is not an existing directory")
        if real not in resolved:
            resolved.append(real)
    if not resolved:
        raise ValueError("at least one root is needed")
    return tuple(resolved)


def _check_text(path: object, roots: Sequence[str]) -> str:
    where = _describe_roots(roots)
    if isinstance(path, (bytes, bytearray)):
        raise ExecutionDeniedError(
            f"path {path!r} is bytes; paths must be text (roots: {where})", path=repr(path)
        )
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise ExecutionDeniedError(
            f"path must be a string, got {type(path).__name__} (roots: {where})"
        )
    if not path:
        raise ExecutionDeniedError(f"path is empty (roots: {where})")
    if "\0" in path:
        raise ExecutionDeniedError(
            f"path {path!r} contains a NUL byte (roots: {where})", path=repr(path)
        )
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES:
        raise ExecutionDeniedError(
            f"path {path[:60]!r}... is {len(encoded)} bytes long, over {MAX_PATH_BYTES} "
            f"(roots: {where})"
        )
    for part in path.split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise ExecutionDeniedError(
                f"path {path[:60]!r}... has a name over {MAX_NAME_BYTES} bytes (roots: {where})"
            )
    return path


def is_inside(real: str, root: str) -> bool:
    """``real`` is ``root`` or below it (both already resolved)."""
    if root == os.sep:
        return real.startswith(os.sep)
    return real == root or real.startswith(root + os.sep)


def assert_path_inside_roots(
    path: str | os.PathLike[str],
    roots: Sequence[str],
    *,
    cwd: str | None = None,
    allow_hard_links: bool = False,
) -> Path:
    """The resolved path, or ``ExecutionDeniedError`` naming the path and the roots.

    ``roots`` must already be resolved (``normalize_roots``). A relative path
    is taken from ``cwd`` (default: the first root). Refused: bytes, NUL,
    over-long paths or names, anything that resolves outside every root, and
    (unless ``allow_hard_links``) a regular file with several hard links.
    """
    text = _check_text(path, roots)
    where = _describe_roots(roots)
    base = cwd if cwd is not None else roots[0]
    joined = text if os.path.isabs(text) else os.path.join(base, text)
    try:
        real = os.path.realpath(joined)
    except (OSError, ValueError) as error:
        raise ExecutionDeniedError(
            f"path {text!r} cannot be resolved ({type(error).__name__}) (roots: {where})"
        ) from None
    if not any(is_inside(real, root) for root in roots):
        shown = f"{text!r}" if real == joined else f"{text!r} (resolves to {real!r})"
        raise ExecutionDeniedError(
            f"path {shown} is outside the workspace roots: {where}", path=text
        )
    if not allow_hard_links:
        try:
            info = os.lstat(real)
        except OSError:
            info = None
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise ExecutionDeniedError(
                f"path {text!r} is a file with {info.st_nlink} hard links; a hard link may "
                f"share its content with a file outside the roots ({where})",
                path=text,
            )
    return Path(real)


def relative_to_roots(real: str | Path, roots: Sequence[str]) -> str:
    """``real`` relative to the root holding it (for messages and events)."""
    text = os.fspath(real)
    for root in roots:
        if is_inside(text, root):
            rel = os.path.relpath(text, root)
            return "." if rel == "." else rel
    return text
