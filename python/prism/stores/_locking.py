"""OS file locks for the file-backed stores.

``flock`` (not ``fcntl``/POSIX record locks) on purpose: flock locks belong
to the open file description, so two store instances in one process exclude
each other the same way two processes do, and the kernel drops the lock when
a holder dies (a SIGKILLed writer never leaves the file locked).

The lock is taken on the data file itself rather than on a sidecar file, so
nothing extra is left next to the session file. Because a file can be
replaced underneath us (rename over it), the holder re-checks after locking
that the path still names the inode it locked and retries otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from prism.errors import StoreError

if sys.platform == "win32":  # pragma: no cover - Prism's file stores are POSIX-only
    fcntl = None
else:
    import fcntl

_MAX_REOPEN = 100


def _same_file(fd: int, path: str) -> bool:
    try:
        on_path = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_path.st_dev, on_path.st_ino)


@contextmanager
def locked_fd(path: str, *, exclusive: bool, create: bool) -> Iterator[int | None]:
    """Open ``path`` and hold a shared or exclusive flock on it.

    Yields the descriptor, or None when the file does not exist and ``create``
    is false (a missing file reads as empty; reading never creates it).
    Writers open with O_APPEND so every write lands at the current end even if
    another holder's view of the size were stale.
    """
    if fcntl is None:  # pragma: no cover
        raise StoreError("file session stores need POSIX flock (not available on Windows)")
    flags = os.O_CLOEXEC | (os.O_RDWR | os.O_APPEND | os.O_CREAT if create else os.O_RDONLY)
    for _ in range(_MAX_REOPEN):
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        try:
            # Blocks until the other holder is done; callers run this in a
            # worker thread so the event loop is never stuck behind it.
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            if not _same_file(fd, path):
                # Replaced or removed while we waited: lock the new file instead.
                continue
            yield fd
            return
        finally:
            os.close(fd)  # closing the last descriptor releases the flock
    raise StoreError(f"session file kept being replaced while locking: {path}")
