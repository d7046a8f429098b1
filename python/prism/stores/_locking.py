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

import errno
import hashlib
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from prism.errors import StoreError
from prism.stores.base import busy_error

if sys.platform == "win32":  # pragma: no cover - Prism's file stores are POSIX-only
    fcntl = None
else:
    import fcntl

_MAX_REOPEN = 100


def os_reason(exc: OSError, path: str) -> str:
    """Why an OS call on ``path`` failed, in words a user can act on.

    ``makedirs`` under a regular file says "File exists" and ``open`` says
    "Not a directory" without naming which component is wrong; this names
    the first ancestor that is not a directory instead."""
    if isinstance(exc, IsADirectoryError):
        return "not a regular file (it is a directory)"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        blocker = _first_non_directory(path)
        if blocker is not None:
            return f"{blocker} is not a directory"
    return exc.strerror or str(exc)


def make_parent_directory(path: str, what: str) -> None:
    """Create the directory ``path`` lives in; ``what`` says what failed
    (``"cannot append to session file x"``) when it cannot be made."""
    parent = os.path.dirname(path)
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{what}: {os_reason(exc, parent)}") from None


def _first_non_directory(path: str) -> str | None:
    current = os.path.abspath(path)
    chain = []
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for candidate in reversed(chain):  # root first
        try:
            if not os.path.isdir(candidate):
                return candidate if os.path.lexists(candidate) else None
        except OSError:
            return None
    return None


class NotRegularFileError(OSError):
    """The path names a FIFO, device, socket or directory, not a file."""


def refuse_non_regular(fd: int, path: str) -> None:
    """A session file must be a regular file: a FIFO would block reads
    forever, a device would feed endless bytes, a directory has none.
    Raised as an OSError so each caller words it with its action."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(
            errno.EINVAL, f"not a regular file (it is {describe_mode(mode)})", path
        )


def describe_mode(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "an unusual kind of file"


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
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait forever for
    # a writer (in a worker thread nobody can cancel). It changes nothing for
    # a regular file, the only kind accepted below.
    flags = os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_RDWR | os.O_APPEND | os.O_CREAT if create else os.O_RDONLY
    for _ in range(_MAX_REOPEN):
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        try:
            refuse_non_regular(fd, path)
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


# --- session leases -------------------------------------------------------------

_LEASE_RETRIES = 100


def lease_directory(store_path: str) -> str:
    """Where a file-backed store keeps its per-session lock files: a sibling
    directory ``<store file>.leases`` (created on the first claim, removed
    again when the last lease is released)."""
    return store_path + ".leases"


def lease_file_name(session_id: str) -> str:
    # Hashed: a session id may hold "/", "..", NUL or be longer than NAME_MAX.
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:40] + ".lock"


def try_lock_session(directory: str, session_id: str) -> int:
    """Hold an exclusive, non-blocking flock on the session's lock file.

    Returns the descriptor; ``unlock_session`` releases the lease, and so
    does the process dying. Raises ``SessionBusyError`` at once when another
    open file description holds it (any process, or another store instance in
    this one), ``StoreError`` when the lock file cannot be created (the
    directory holding ``directory`` must exist).
    """
    if fcntl is None:  # pragma: no cover
        raise StoreError("file session stores need POSIX flock (not available on Windows)")
    path = os.path.join(directory, lease_file_name(session_id))
    for _ in range(_LEASE_RETRIES):
        try:
            try:
                os.mkdir(directory, 0o755)
            except FileExistsError:
                pass
            fd = os.open(
                path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644
            )
        except FileNotFoundError:
            if not os.path.isdir(os.path.dirname(directory) or "."):
                raise StoreError(
                    f"cannot claim session {session_id!r}: directory of {directory} is missing"
                ) from None
            continue  # the last holder removed the lease directory meanwhile: make it again
        except OSError as exc:
            raise StoreError(
                f"cannot claim session {session_id!r}: {directory}: {os_reason(exc, path)}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise busy_error(session_id, "a run in another process or store") from None
        except OSError as exc:
            os.close(fd)
            raise StoreError(
                f"cannot claim session {session_id!r}: {os_reason(exc, path)}"
            ) from None
        if _same_file(fd, path):
            return fd
        # The previous holder unlinked this file after we opened it: the lock
        # we got is on an orphan. Start over on whatever the path names now.
        os.close(fd)
    raise StoreError(f"cannot claim session {session_id!r}: its lock file kept being replaced")


def unlock_session(fd: int, directory: str, session_id: str) -> None:
    """Release a lease: remove the lock file while still holding it (so the
    directory does not fill up with one file per session ever run), then
    close. A claimant that opened the old file notices the unlink and retries."""
    path = os.path.join(directory, lease_file_name(session_id))
    try:
        if _same_file(fd, path):
            os.unlink(path)
    except OSError:
        pass  # a leftover lock file is harmless: the next claim reuses it
    finally:
        os.close(fd)
    try:
        os.rmdir(directory)
    except OSError:
        pass  # not empty (other leases held) or already gone
