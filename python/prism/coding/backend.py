"""The workspace backend: every file and process operation the coding tools make.

The tools never call ``open``/``os``/``subprocess`` themselves; they go
through a ``WorkspaceBackend``, so a sandbox (a container, a bubblewrap
jail) can stand in for the local machine without changing a tool. Paths
given to a backend are absolute and already checked against the roots by
the tool and its execution policy.

``LocalBackend`` is the implementation on this machine:

- reads open the final component with ``O_NOFOLLOW`` (a symlink swapped in
  after the roots check is refused, not followed);
- ``write_atomic`` writes a temp file in the same directory, fsyncs it,
  gives it the old file's mode and renames it over the target (a crash
  leaves the old file or the new one, never half of either);
- ``exec_file`` runs argv without a shell, stdin closed, no controlling
  terminal, in a new session (its own process group), with exactly the env
  it is given; on timeout, on cancellation and after the leader exits, the
  whole group is killed so nothing it started outlives the call. Output is
  kept as head and tail within ``output_cap`` bytes; past ``kill_after_bytes``
  the group is killed (a command printing gigabytes ends early).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
import anyio.to_thread


@dataclass(frozen=True, slots=True)
class FileStat:
    size: int
    mtime_ns: int
    mode: int
    inode: int
    is_file: bool
    is_dir: bool


@dataclass(frozen=True, slots=True)
class ExecResult:
    """A finished command. ``output`` is stdout and stderr interleaved as they
    arrived, cut to head + tail when over the cap (``omitted_bytes`` says how
    much was dropped from the middle)."""

    exit_code: int | None
    output: str
    output_bytes: int
    omitted_bytes: int
    timed_out: bool
    killed_for_output: bool
    duration_ms: float


@runtime_checkable
class WorkspaceBackend(Protocol):
    """What a workspace must offer (local disk, a sandbox, a remote machine)."""

    def read_bytes(self, path: str, max_bytes: int) -> bytes: ...

    def stat(self, path: str) -> FileStat | None: ...

    def write_atomic(self, path: str, data: bytes, mode: int | None) -> None: ...

    def make_dirs(self, path: str) -> None: ...

    def remove(self, path: str) -> None: ...

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
    ) -> ExecResult: ...


class _HeadTail:
    """Keeps the first and last ``cap // 2`` bytes of a stream."""

    __slots__ = ("cap", "head", "tail", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        half = self.cap // 2
        room = half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > half:
                del self.tail[: len(self.tail) - half]

    def text(self) -> tuple[str, int]:
        kept = len(self.head) + len(self.tail)
        omitted = self.total - kept
        head = self.head.decode("utf-8", "replace")
        if omitted <= 0:
            return head + self.tail.decode("utf-8", "replace"), 0
        marker = f"\n[... {omitted} bytes of output omitted ...]\n"
        return head + marker + self.tail.decode("utf-8", "replace"), omitted


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    """A member of the group that is not yet a zombie (SIGKILL is delivered
    asynchronously; a dying process still shows up for a moment)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _reap_group_blocking(pgid: int, limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    delay = 0.0005
    while _group_alive(pgid) and time.monotonic() < deadline:
        _kill_group(pgid)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


async def _reap_group(pgid: int, limit: float = 5.0) -> None:
    """Kill the group and wait (bounded) until none of it is running, so a
    returning call leaves no process of its command behind."""
    _kill_group(pgid)
    deadline = time.monotonic() + limit
    delay = 0.001
    while _group_alive(pgid) and time.monotonic() < deadline:
        _kill_group(pgid)  # a member forked while the first signal landed
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.05)


class _Launch:
    """The command's process group as the worker thread starts it. An abort
    can land before ``Popen`` returns in the thread (the command may already
    be running); the abort then marks the launch abandoned and waits until it
    is settled, so the group is killed either way and none of it outlives
    the call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entered = False
        self.abandoned = False
        self.pid: int | None = None
        self.settled = threading.Event()

    def enter(self) -> bool:
        """In the thread, first: False when the call was already abandoned
        (then nothing starts)."""
        with self.lock:
            self.entered = True
            return not self.abandoned

    def started(self, pid: int) -> bool:
        """Record the group; True when the call was abandoned meanwhile."""
        with self.lock:
            self.pid = pid
            return self.abandoned

    def abandon(self) -> bool:
        """Mark the call abandoned; True when the thread may be starting."""
        with self.lock:
            self.abandoned = True
            return self.entered


class LocalBackend:
    """The local machine (see the module docstring)."""

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(max_bytes)

    def stat(self, path: str) -> FileStat | None:
        try:
            info = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return FileStat(
            size=info.st_size,
            mtime_ns=info.st_mtime_ns,
            mode=stat.S_IMODE(info.st_mode),
            inode=info.st_ino,
            is_file=stat.S_ISREG(info.st_mode),
            is_dir=stat.S_ISDIR(info.st_mode),
        )

    def write_atomic(self, path: str, data: bytes, mode: int | None) -> None:
        directory, name = os.path.split(path)
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".prism-tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, mode if mode is not None else 0o644)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def make_dirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def remove(self, path: str) -> None:
        os.unlink(path)

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
    ) -> ExecResult:
        # The process is started and pumped in one worker thread (a thread hop
        # costs far less than asyncio's subprocess transport); the event loop
        # only waits, and on cancellation kills the group itself.
        started = time.perf_counter()
        launch = _Launch()
        try:
            outcome = await anyio.to_thread.run_sync(
                _run_blocking,
                list(argv),
                cwd,
                dict(env),
                timeout,
                output_cap,
                kill_after_bytes,
                stdin,
                launch,
                abandon_on_cancel=True,
            )
        except BaseException:
            if launch.abandon():
                with anyio.CancelScope(shield=True):
                    if not launch.settled.is_set():
                        # Popen has not returned: the thread kills what it starts.
                        await anyio.to_thread.run_sync(launch.settled.wait, 5.0)
                    if launch.pid is not None:
                        await _reap_group(launch.pid)
            raise
        exit_code, buffer, timed_out, flooded = outcome
        text, omitted = buffer.text()
        return ExecResult(
            exit_code=exit_code,
            output=text,
            output_bytes=buffer.total,
            omitted_bytes=omitted,
            timed_out=timed_out,
            killed_for_output=flooded,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def _pump(
    process: subprocess.Popen[bytes],
    buffer: _HeadTail,
    deadline: float,
    kill_after_bytes: int,
) -> tuple[bool, bool]:
    """Read output until EOF, the deadline or the flood limit. When the leader
    exits its group is killed, so a background child holding the pipe cannot
    keep the call open. Returns (timed_out, flooded)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    leader_fd = os.pidfd_open(process.pid) if hasattr(os, "pidfd_open") else None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ, "out")
            if leader_fd is not None:
                selector.register(leader_fd, selectors.EVENT_READ, "exit")
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True, False
                for key, _ in selector.select(
                    min(remaining, 0.5 if leader_fd is None else remaining)
                ):
                    if key.data == "exit":
                        selector.unregister(key.fileobj)
                        _kill_group(process.pid)
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        return False, False
                    buffer.add(chunk)
                    if buffer.total > kill_after_bytes:
                        return False, True
                if leader_fd is None and process.poll() is not None:
                    _kill_group(process.pid)
    finally:
        if leader_fd is not None:
            os.close(leader_fd)


def _run_blocking(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    timeout: float,
    output_cap: int,
    kill_after_bytes: int,
    stdin: bytes | None,
    launch: _Launch,
) -> tuple[int | None, _HeadTail, bool, bool]:
    buffer = _HeadTail(output_cap)
    deadline = time.monotonic() + timeout
    try:
        if not launch.enter():
            raise RuntimeError("the call was aborted before its command started")
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        if launch.started(process.pid):
            _kill_group(process.pid)
    finally:
        launch.settled.set()
    with process:
        try:
            if stdin is not None and process.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.write(stdin)
                process.stdin.close()
            timed_out, flooded = _pump(process, buffer, deadline, kill_after_bytes)
            if not (timed_out or flooded):
                # EOF can come before the exit (a program closing its stdout
                # first); killing it then would turn exit 0 into SIGKILL.
                try:
                    process.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            _kill_group(process.pid)
            process.wait()
            _reap_group_blocking(process.pid)
    exit_code = None if (timed_out or flooded) else process.returncode
    return exit_code, buffer, timed_out, flooded
