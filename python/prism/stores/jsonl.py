"""JSONL session store: one compact JSON entry per line in a caller-named file.

Wire-compatible with the original's session files (same entry shapes and
camelCase keys). Beyond the original, several processes may append to one
file: every append holds an exclusive ``flock`` on the file, repairs a torn
last line left by a crashed writer, and writes its whole batch with a single
``write``, so lines are never interleaved (docs/stores.md has the contract).

Blocking I/O: appends and index catch-up run in a worker thread through
``anyio.to_thread.run_sync`` because waiting for another process's lock can
take arbitrarily long. The only I/O done on the event loop is one ``stat`` per
``list``/``get``, which is how the store notices that nothing changed and
answers from its in-memory index without touching the file.
"""

from __future__ import annotations

import builtins
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import anyio.to_thread

from prism.contracts import SessionEntry, SessionEntryParseError
from prism.errors import DuplicateEntryError, StoreError
from prism.stores._codec import encode_batch, parse_lines
from prism.stores._locking import (
    lease_directory,
    locked_fd,
    make_parent_directory,
    os_reason,
    try_lock_session,
    unlock_session,
)
from prism.stores.base import SessionLease, check_key, check_path, check_session_id

_log = logging.getLogger("prism.stores")

_T = TypeVar("_T")
_Fingerprint = tuple[int, int, int, int, int]  # dev, inode, size, mtime_ns, ctime_ns

# Rewrite detection: before trusting the bytes after the indexed offset, the
# store re-reads a few spans of the indexed prefix and compares them with what
# it saw. The tail span (the end of the last indexed line) moves with every
# append; the fixed spans sit at offsets that do not depend on the file size,
# so each is read once when the file first grows past it.
_TAIL_SPAN = 256
_FIXED_SPAN = 64
_FIXED_OFFSETS = (0, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 4 << 30, 64 << 30)


class _Samples(NamedTuple):
    fixed: tuple[tuple[int, bytes], ...]  # (offset, bytes) inside the indexed prefix
    tail: bytes  # the last bytes of the indexed prefix


_NO_SAMPLES = _Samples((), b"")


class _Tail(NamedTuple):
    file_id: tuple[int, int]
    reset: bool  # replaced, shrunk or rewritten: re-index from byte 0
    data: bytes
    size: int
    fingerprint: _Fingerprint
    samples: _Samples


class JsonlSessionStore:
    """A ``SessionStore`` over one JSONL file (POSIX only).

    The store keeps an index of the file (entries by id and by session) and
    catches it up incrementally: it remembers the byte offset it has read and
    parses only bytes appended since, by any process. A shrunk or replaced
    file (different inode) is re-read from the start. Returned entries are
    shared with the index: treat them as read-only.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create_directory: bool = True, fsync: bool = False
    ) -> None:
        self.path = check_path(path, "session file")
        self.create_directory = create_directory
        self.fsync = fsync
        # Guards the index and serializes this instance's appends: flock does
        # not exclude two threads sharing one open file description.
        self._lock = threading.Lock()
        self._reset(None)

    # --- SessionStore -----------------------------------------------------

    async def append(self, entry: SessionEntry) -> None:
        await self.append_many([entry])

    async def append_many(self, entries: Sequence[SessionEntry]) -> None:
        # Encoding and validation run in the worker too (a multi-MB tool
        # result must not stall the loop). Not abandoned on cancellation: once
        # in the thread, the append runs to completion (all or nothing) and
        # the cancellation lands at the caller's next checkpoint.
        await anyio.to_thread.run_sync(self._append_blocking, entries)

    async def list(self, session_id: str) -> builtins.list[SessionEntry]:
        check_key(session_id, "session id")
        return await self._read(lambda: list(self._by_session.get(session_id, ())))

    async def get(self, entry_id: str) -> SessionEntry | None:
        check_key(entry_id, "entry id")
        return await self._read(lambda: self._by_id.get(entry_id))

    async def list_sessions(self) -> builtins.list[str]:
        return await self._read(lambda: list(self._by_session))

    async def last_entry_id(self, session_id: str) -> str | None:
        """The id ``list(session_id)[-1]`` would have, without copying the list."""
        check_key(session_id, "session id")

        def last() -> str | None:
            entries = self._by_session.get(session_id)
            return entries[-1]["id"] if entries else None

        return await self._read(last)

    async def claim(self, session_id: str) -> SessionLease:
        """Lease ``session_id`` with an exclusive ``flock`` on its own lock
        file in ``<path>.leases/``: held until ``release()`` or until this
        process dies. Done on the event loop on purpose: a non-blocking
        flock never waits, and a claim made in a worker thread could be
        stranded by a cancellation."""
        check_session_id(session_id)
        directory = lease_directory(self.path)
        self._make_parent("claim a session in")
        fd = try_lock_session(directory, session_id)
        return SessionLease(session_id, lambda: unlock_session(fd, directory, session_id))

    @property
    def parse_errors(self) -> builtins.list[SessionEntryParseError]:
        """Lines the index has quarantined so far (line numbers are 1-based).
        Lock-free on purpose: a property must not block the event loop, and
        copying a list the index only ever extends or replaces is safe."""
        return list(self._errors)

    # --- internals --------------------------------------------------------

    def _reset(self, file_id: tuple[int, int] | None) -> None:
        self._file_id = file_id
        self._fingerprint: _Fingerprint | None = None
        self._samples = _NO_SAMPLES  # spans of the indexed prefix, to notice a rewrite
        self._offset = 0  # bytes of the file the index reflects
        self._lines = 0  # lines in those bytes (a final unterminated line counts)
        self._pending_newline = False  # the file does not end with "\n"
        self._by_id: dict[str, SessionEntry] = {}
        self._by_session: dict[str, list[SessionEntry]] = {}
        self._errors: builtins.list[SessionEntryParseError] = []

    async def _read(self, answer: Callable[[], _T]) -> _T:
        # Fast path on the event loop: only when no worker holds the index
        # (never block the loop on a thread that may be waiting for a flock).
        if self._lock.acquire(blocking=False):
            try:
                if self._unchanged():
                    return answer()
            finally:
                self._lock.release()
        return await anyio.to_thread.run_sync(self._refresh_then, answer)

    def _unchanged(self) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._file_id is None
        except (OSError, ValueError):
            return False  # the worker's open reports it as a StoreError
        return self._fingerprint == _fingerprint(st)

    def _refresh_then(self, answer: Callable[[], _T]) -> _T:
        with self._lock:
            try:
                with locked_fd(self.path, exclusive=False, create=False) as fd:
                    tail = None if fd is None else self._read_tail(fd)
            except OSError as exc:
                raise StoreError(
                    f"cannot read session file {self.path}: {os_reason(exc, self.path)}"
                ) from None
            # Parsed after the shared flock is released: the bytes are final,
            # and a writer should not wait for a big first load to be parsed.
            if tail is None:
                self._reset(None)
            else:
                self._apply_tail(tail)
            return answer()

    def _read_tail(self, fd: int) -> _Tail:
        """The bytes appended since the last read. Caller holds the instance
        lock and a flock, so no writer is mid-write: the bytes up to the
        current size are final, including an unterminated last line."""
        st = os.fstat(fd)
        file_id = (st.st_dev, st.st_ino)
        reset = (
            file_id != self._file_id
            or st.st_size < self._offset
            # Same inode, not shorter: still a rewrite (truncate then write
            # more) unless the prefix we indexed reads back unchanged.
            or not _prefix_unchanged(fd, self._offset, self._samples)
        )
        start = 0 if reset else self._offset
        data = _pread_all(fd, st.st_size - start, start)
        if not reset and data and self._pending_newline and not data.startswith(b"\n"):
            # Someone extended our unterminated last line without the
            # protocol's separating newline: the index is stale, start over.
            reset = True
            data = _pread_all(fd, st.st_size, 0)
        samples = _sample(fd, st.st_size, _NO_SAMPLES if reset else self._samples)
        return _Tail(file_id, reset, data, st.st_size, _fingerprint(st), samples)

    def _apply_tail(self, tail: _Tail) -> None:
        if tail.reset:
            self._reset(tail.file_id)
        data = tail.data
        if data and self._pending_newline:
            data = data[1:]  # the newline that terminated the line we indexed
            self._pending_newline = False
        if data:
            entries, errors = parse_lines(data, first_line=self._lines + 1)
            self._pending_newline = not data.endswith(b"\n")
            self._lines += data.count(b"\n") + (1 if self._pending_newline else 0)
            self._index(entries)
            self._errors.extend(errors)
            for error in errors:
                # The line number and reason only: the raw text may hold anything.
                _log.warning(
                    "%s: line %d quarantined: %s", self.path, error["line"], error["reason"]
                )
        self._offset = tail.size
        self._fingerprint = tail.fingerprint
        self._samples = tail.samples

    def _index(self, entries: Sequence[SessionEntry]) -> None:
        by_id = self._by_id
        for entry in entries:
            entry_id = entry["id"]
            if entry_id in by_id:
                continue  # a foreign writer's duplicate: the first occurrence wins
            by_id[entry_id] = entry
            session = self._by_session.get(entry["sessionId"])
            if session is None:
                self._by_session[entry["sessionId"]] = [entry]
            else:
                session.append(entry)

    def _append_blocking(self, entries: Sequence[SessionEntry]) -> None:
        lines, parsed = encode_batch(entries)
        if not lines:
            return
        _log.debug("%s: appending %d entries", self.path, len(lines))
        payload = b"".join(line + b"\n" for line in lines)
        with self._lock:
            try:
                if self._file_id is None:
                    self._make_parent()
                with locked_fd(self.path, exclusive=True, create=True) as fd:
                    assert fd is not None
                    self._apply_tail(self._read_tail(fd))
                    for entry in parsed:
                        if entry["id"] in self._by_id:
                            raise DuplicateEntryError(f"duplicate session entry id {entry['id']!r}")
                    self._write(fd, payload)
                    # A torn line was already counted when it was indexed.
                    self._lines += len(parsed)
                    self._pending_newline = False
                    self._index(parsed)
                    st = os.fstat(fd)
                    self._offset = st.st_size
                    self._fingerprint = _fingerprint(st)
                    self._samples = _sample(fd, st.st_size, self._samples)
            except OSError as exc:
                raise StoreError(
                    f"cannot append to session file {self.path}: {os_reason(exc, self.path)}"
                ) from None

    def _make_parent(self, action: str = "append to") -> None:
        if self.create_directory:
            make_parent_directory(self.path, f"cannot {action} session file {self.path}")

    def _write(self, fd: int, payload: bytes) -> None:
        # A torn last line (a writer died mid-line) is closed off with a
        # newline so it stays one quarantined line and ours start fresh.
        data = b"\n" + payload if self._pending_newline else payload
        start = self._offset
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            if self.fsync:
                os.fsync(fd)
        except BaseException:
            # Still under the exclusive lock: cut a partial batch back off so
            # a failed append leaves the file exactly as it found it.
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise


def _fingerprint(st: os.stat_result) -> _Fingerprint:
    # ctime too: a tool that restores mtime after rewriting (rsync -t,
    # touch -r) cannot restore ctime.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _sample(fd: int, size: int, previous: _Samples) -> _Samples:
    """Spans of the first ``size`` bytes to re-check on the next catch-up.
    Fixed spans already taken are kept (those bytes are final); a new one is
    read only when the file has grown past its offset."""
    fixed = list(previous.fixed)
    if fixed and len(fixed[-1][1]) < _FIXED_SPAN:  # taken while the file was shorter
        offset = fixed.pop()[0]
        fixed.append((offset, _pread_all(fd, min(_FIXED_SPAN, size - offset), offset)))
    for offset in _FIXED_OFFSETS[len(fixed) :]:
        if offset >= size:
            break
        fixed.append((offset, _pread_all(fd, min(_FIXED_SPAN, size - offset), offset)))
    tail_len = min(_TAIL_SPAN, size)
    return _Samples(tuple(fixed), _pread_all(fd, tail_len, size - tail_len))


def _prefix_unchanged(fd: int, size: int, samples: _Samples) -> bool:
    """Whether the file's first ``size`` bytes still hold the sampled spans.
    Bounded work (at most ~1 KB read) however large the file."""
    if size == 0:
        return True
    tail = samples.tail
    if _pread_all(fd, len(tail), size - len(tail)) != tail:
        return False
    return all(_pread_all(fd, len(span), offset) == span for offset, span in samples.fixed)


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    if size <= 0:
        return b""
    chunks: builtins.list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def create_jsonl_session_store(
    path: str | os.PathLike[str], *, create_directory: bool = True, fsync: bool = False
) -> JsonlSessionStore:
    """A JSONL store over ``path``; a missing file is an empty store and is
    created (with its directory when ``create_directory``) on first append.
    ``fsync=True`` makes every acknowledged append survive power loss."""
    return JsonlSessionStore(path, create_directory=create_directory, fsync=fsync)


async def read_jsonl_session_entries(
    path: str | os.PathLike[str],
) -> tuple[list[SessionEntry], list[SessionEntryParseError]]:
    """Parse a whole session file: valid entries plus one error record
    ``{line, reason, raw}`` per quarantined line. Never raises for bad
    content; a missing file is ``([], [])``."""
    return await anyio.to_thread.run_sync(_read_all_blocking, check_path(path, "session file"))


def _read_all_blocking(path: str) -> tuple[list[SessionEntry], list[SessionEntryParseError]]:
    try:
        with locked_fd(path, exclusive=False, create=False) as fd:
            if fd is None:
                return [], []
            data = _pread_all(fd, os.fstat(fd).st_size, 0)
    except OSError as exc:
        raise StoreError(f"cannot read session file {path}: {os_reason(exc, path)}") from None
    return parse_lines(data)
