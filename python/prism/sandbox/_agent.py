"""The agent that runs INSIDE a sandbox (standard library only, Python 3.9+).

Both backends start it once per sandbox, as the sandbox's unprivileged user,
under the sandbox's limits: every command then costs one fork+exec inside the
already-built namespaces instead of building them again (bubblewrap's
namespaces cost ~50 ms, ``docker exec`` ~150 ms on these machines). The host
talks to it over a Unix socket in a bind-mounted control directory, one JSON
object per line, so a new host process can reconnect to a Docker sandbox after
a restart. Its answers are data from inside the sandbox: the host treats them
as untrusted, exactly like a command's output.

This module never imports prism: it is copied into the Docker image and read
from the host's site-packages by the native backend.
"""

from __future__ import annotations

import _thread
import base64
import hashlib
import json
import os
import resource
import selectors
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from typing import Any

PROTOCOL_VERSION = 1
_READ_CHUNK = 65536
_RLIMITS = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
    "nproc": resource.RLIMIT_NPROC,
}


class AgentError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes:
    return b"" if not text else base64.b64decode(text)


def argv_fingerprint(argv: list[str], cwd: str) -> str:
    blob = json.dumps({"argv": argv, "cwd": cwd}, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, environ) of every process this agent can see."""
    found: dict[int, tuple[int, bytes]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        found[int(name)] = (int(fields[1]), environ)
    return found


def _tree(root: int, marker: bytes) -> list[int]:
    """Every live process below ``root`` by parent pid, plus any process
    carrying the command's marker variable (one that double-forked and
    setsid'd away from its parent is still found by it)."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found = {pid for pid, (_, environ) in table.items() if marker and marker in environ}
    todo = [root, *found]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(os.getpid())
    return sorted(found)


def kill_tree(process: subprocess.Popen[bytes], marker: str = "") -> None:
    """SIGKILL the command, its process group and every process of its tree."""
    for pid in [process.pid, *_tree(process.pid, marker.encode())]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def _limit_child(pid: int) -> None:
    """Right after the spawn: the command's own CPU-time limit (the agent has
    none: it lives as long as the sandbox) and an OOM score that makes the
    OOM killer pick it before the agent (raising a score needs no
    privilege). Done from outside because a ``preexec_fn`` would force
    Python's slow fork path (~20 ms a command); the command could fork in
    the microseconds before this, and such a child escapes only these two
    (the deadline and the tree kill still reach it)."""
    if _CHILD_CPU_SECONDS:
        try:
            # SIGXCPU at the limit, SIGKILL a second later for one that ignores it.
            limit = (_CHILD_CPU_SECONDS, _CHILD_CPU_SECONDS + 1)
            resource.prlimit(pid, resource.RLIMIT_CPU, limit)
        except OSError:
            pass
    try:
        fd = os.open(f"/proc/{pid}/oom_score_adj", os.O_WRONLY)
        os.write(fd, b"1000")
        os.close(fd)
    except OSError:
        pass


_CHILD_CPU_SECONDS = 0


def _spawn(request: dict[str, Any], stdin: int, marker: str) -> subprocess.Popen[bytes]:
    argv = request.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise AgentError(
            "ERR_PRISM_SANDBOX_BAD_REQUEST", "argv must be a non-empty list of strings"
        )
    env = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
    env["PRISM_SANDBOX_RUN"] = marker
    try:
        process = subprocess.Popen(
            argv,
            cwd=request.get("cwd") or None,
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        _limit_child(process.pid)
        return process
    except FileNotFoundError as exc:
        raise AgentError(
            "ERR_PRISM_SANDBOX_NOT_FOUND", f"{exc.filename or argv[0]}: not found"
        ) from exc
    except NotADirectoryError as exc:
        raise AgentError(
            "ERR_PRISM_SANDBOX_BAD_CWD", f"cwd {request.get('cwd')!r} is not a directory"
        ) from exc
    except PermissionError as exc:
        raise AgentError("ERR_PRISM_SANDBOX_DENIED", f"{argv[0]}: permission denied") from exc
    except OSError as exc:
        # EAGAIN at fork: the process limit; ENOMEM: the memory limit.
        raise AgentError(
            "ERR_PRISM_SANDBOX_SPAWN", f"could not start {argv[0]}: {exc.strerror}"
        ) from exc


class CommandRun:
    """One-shot command: bounded capture of both streams, deadline, cancel."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.cancelled = threading.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.marker = ""

    def run(self) -> dict[str, Any]:
        stdin_data = _unb64(self.request.get("stdin"))
        self.marker = os.urandom(8).hex()
        stdin = subprocess.PIPE if stdin_data else subprocess.DEVNULL
        process = _spawn(self.request, stdin, self.marker)
        self.process = process
        if self.cancelled.is_set():
            kill_tree(process, self.marker)
        cap = int(self.request.get("cap") or 1 << 20)
        timeout = self.request.get("timeout")
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        fed = threading.Event()
        if stdin_data:
            _thread.start_new_thread(_feed, (process, stdin_data, fed))
        else:
            fed.set()
        captured = {"stdout": bytearray(), "stderr": bytearray()}
        truncated = {"stdout": False, "stderr": False}
        limit = self._pump(process, captured, truncated, cap, deadline)
        code = process.wait()
        fed.wait(timeout=1)
        disk_full = code != 0 and any(_full(p) for p in self.request.get("diskPaths") or [])
        return {
            "diskFull": disk_full,
            "exitCode": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "stdout": _b64(bytes(captured["stdout"])),
            "stderr": _b64(bytes(captured["stderr"])),
            "stdoutTruncated": truncated["stdout"],
            "stderrTruncated": truncated["stderr"],
            "limit": limit,
        }

    def _pump(
        self,
        process: subprocess.Popen[bytes],
        captured: dict[str, bytearray],
        truncated: dict[str, bool],
        cap: int,
        deadline: float | None,
    ) -> str | None:
        selector = selectors.DefaultSelector()
        assert process.stdout is not None and process.stderr is not None
        selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        limit: str | None = None
        open_streams = 2
        give_up: float | None = None
        while open_streams:
            now = time.monotonic()
            if give_up is not None and now >= give_up:
                break  # killed, but something still holds the pipes: stop reading
            until = [t for t in (deadline, give_up) if t is not None]
            wait = 0.2 if not until else max(0.001, min(0.2, min(until) - now))
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                buffer = captured[key.data]
                room = cap - len(buffer)
                if room < len(chunk):
                    truncated[key.data] = True
                buffer.extend(chunk[: max(room, 0)])
            if limit is None and self.cancelled.is_set():
                limit = "cancelled"
            if limit is None and deadline is not None and time.monotonic() >= deadline:
                limit = "timeout"
            if limit is not None and give_up is None:
                kill_tree(process, self.marker)
                give_up = time.monotonic() + 1.0
        selector.close()
        process.stdout.close()
        process.stderr.close()
        return limit


def _full(path: str) -> bool:
    """Whether the filesystem at ``path`` has (almost) no block left for us."""
    try:
        info = os.statvfs(path)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < 64 * 1024


def _feed(process: subprocess.Popen[bytes], data: bytes, done: threading.Event) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        process.stdin.close()
    except OSError:
        pass
    finally:
        done.set()


class ManagedProcess:
    """A long-running process: stdin kept open, output in a ring buffer."""

    def __init__(self, proc_id: str, request: dict[str, Any]) -> None:
        self.id = proc_id
        self.argv = list(request["argv"])
        self.cwd = str(request.get("cwd") or "")
        self.fingerprint = argv_fingerprint(self.argv, self.cwd)
        self.capacity = int(request.get("buffer") or 1 << 20)
        self.buffer = bytearray()
        self.start_offset = 0  # stream offset of buffer[0]
        self.lock = threading.Condition()
        self.marker = os.urandom(8).hex()
        self.process = _spawn(request, subprocess.PIPE, self.marker)
        self.readers = [
            threading.Thread(target=self._drain, args=(stream,), daemon=True)
            for stream in (self.process.stdout, self.process.stderr)
        ]
        for reader in self.readers:
            reader.start()

    def _drain(self, stream: Any) -> None:
        while True:
            chunk = os.read(stream.fileno(), _READ_CHUNK)
            if not chunk:
                return
            with self.lock:
                self.buffer.extend(chunk)
                overflow = len(self.buffer) - self.capacity
                if overflow > 0:
                    del self.buffer[:overflow]
                    self.start_offset += overflow
                self.lock.notify_all()

    def settle(self) -> None:
        """Once the process has exited, let the readers take what is still in
        the pipes (bounded: a background child may hold them open)."""
        if self.process.poll() is not None:
            for reader in self.readers:
                reader.join(timeout=1)

    def read(self, since: int) -> dict[str, Any]:
        self.settle()
        with self.lock:
            end = self.start_offset + len(self.buffer)
            dropped = since < self.start_offset
            begin = max(since, self.start_offset) - self.start_offset
            data = bytes(self.buffer[begin:])
        return {"data": _b64(data), "offset": end, "dropped": dropped, **self.state()}

    def state(self) -> dict[str, Any]:
        code = self.process.poll()
        return {
            "running": code is None,
            "exitCode": code if code is not None and code >= 0 else None,
            "signal": -code if code is not None and code < 0 else None,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "proc": self.id,
            "argv": self.argv,
            "cwd": self.cwd,
            "fingerprint": self.fingerprint,
            **self.state(),
        }


class Agent:
    def __init__(self) -> None:
        self.runs: dict[str, CommandRun] = {}
        self.processes: dict[str, ManagedProcess] = {}
        self.lock = threading.Lock()
        self.counter = 0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None)
        if not isinstance(op, str) or handler is None:
            raise AgentError("ERR_PRISM_SANDBOX_BAD_REQUEST", f"unknown op {op!r}")
        result: dict[str, Any] = handler(request)
        return result

    def op_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"version": PROTOCOL_VERSION, "uid": os.getuid(), "pid": os.getpid()}

    def op_exec(self, request: dict[str, Any]) -> dict[str, Any]:
        run = CommandRun(request)
        key = str(request.get("id"))
        with self.lock:
            self.runs[key] = run
        try:
            return run.run()
        finally:
            with self.lock:
                self.runs.pop(key, None)

    def op_cancel(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            run = self.runs.get(str(request.get("target")))
        if run is not None:
            run.cancelled.set()
            if run.process is not None:
                kill_tree(run.process, run.marker)
        return {"cancelled": run is not None}

    def op_killall(self, request: dict[str, Any]) -> dict[str, Any]:
        """Kill every command and process this agent started."""
        with self.lock:
            runs = list(self.runs.values())
            processes = list(self.processes.values())
        for run in runs:
            run.cancelled.set()
            if run.process is not None:
                kill_tree(run.process, run.marker)
        for managed in processes:
            kill_tree(managed.process, managed.marker)
        return {"killed": len(runs) + len(processes)}

    def _process(self, request: dict[str, Any]) -> ManagedProcess:
        with self.lock:
            managed = self.processes.get(str(request.get("proc")))
        if managed is None:
            raise AgentError(
                "ERR_PRISM_PROCESS_NOT_FOUND", f"no process {request.get('proc')!r} in this sandbox"
            )
        return managed

    def op_start(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.counter += 1
            proc_id = f"p{self.counter}-{os.urandom(6).hex()}"
        managed = ManagedProcess(proc_id, request)
        with self.lock:
            self.processes[proc_id] = managed
        return managed.describe()

    def op_describe(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._process(request).describe()

    def op_read(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._process(request).read(int(request.get("since") or 0))

    def op_write(self, request: dict[str, Any]) -> dict[str, Any]:
        managed = self._process(request)
        stdin = managed.process.stdin
        assert stdin is not None
        try:
            data = _unb64(request.get("data"))
            if data:
                stdin.write(data)
                stdin.flush()
            if request.get("close"):
                stdin.close()
        except (OSError, ValueError) as exc:
            raise AgentError(
                "ERR_PRISM_PROCESS_STDIN_CLOSED", f"stdin of {managed.id} is closed"
            ) from exc
        return managed.state()

    def op_signal(self, request: dict[str, Any]) -> dict[str, Any]:
        managed = self._process(request)
        number = int(request.get("signal") or signal.SIGTERM)
        if number == signal.SIGKILL:
            kill_tree(managed.process, managed.marker)
        else:
            try:
                os.killpg(managed.process.pid, number)
            except OSError:
                pass
        return managed.state()

    def op_wait(self, request: dict[str, Any]) -> dict[str, Any]:
        managed = self._process(request)
        try:
            managed.process.wait(timeout=request.get("timeout"))
        except subprocess.TimeoutExpired:
            pass
        managed.settle()
        return managed.state()

    def op_release(self, request: dict[str, Any]) -> dict[str, Any]:
        managed = self._process(request)
        kill_tree(managed.process, managed.marker)
        managed.process.wait()
        with self.lock:
            self.processes.pop(managed.id, None)
        return managed.state()

    def op_export(self, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "entries": export_tree(
                str(request["root"]), int(request["maxBytes"]), int(request["maxEntries"])
            )
        }

    def op_import(self, request: dict[str, Any]) -> dict[str, Any]:
        root = str(request["root"])
        for entry in request["entries"]:
            target = os.path.join(root, entry["path"])
            if entry["type"] == "dir":
                os.makedirs(target, exist_ok=True)
                os.chmod(target, int(entry["mode"]) & 0o755 | 0o700)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            # O_NOFOLLOW: a symlink planted at the target is never written through.
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            descriptor = os.open(target, flags, int(entry["mode"]) & 0o755 | 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(_unb64(entry["data"]))
        return {"imported": len(request["entries"])}


def export_tree(root: str, max_bytes: int, max_entries: int) -> list[dict[str, Any]]:
    """Regular files and directories under ``root``, never following a link;
    any other entry (symlink, device, fifo, socket) or a setuid bit refuses
    the whole export, naming the entry."""
    entries: list[dict[str, Any]] = []
    total = 0
    for current, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            full = os.path.join(current, name)
            rel = os.path.relpath(full, root)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                entries.append({"path": rel, "type": "dir", "mode": stat.S_IMODE(info.st_mode)})
            elif stat.S_ISREG(info.st_mode):
                if info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    raise AgentError(
                        "ERR_PRISM_SANDBOX_TAR_ENTRY", f"{rel}: setuid/setgid file refused"
                    )
                total += info.st_size
                if total > max_bytes:
                    raise AgentError(
                        "ERR_PRISM_SANDBOX_EXPORT_LIMIT", f"workspace exceeds {max_bytes} bytes"
                    )
                with open(full, "rb") as handle:
                    data = handle.read(max_bytes + 1)
                entries.append(
                    {
                        "path": rel,
                        "type": "file",
                        "mode": stat.S_IMODE(info.st_mode),
                        "data": _b64(data),
                    }
                )
            else:
                kind = "symlink" if stat.S_ISLNK(info.st_mode) else "special file"
                raise AgentError(
                    "ERR_PRISM_SANDBOX_TAR_ENTRY", f"{rel}: {kind} refused in an export"
                )
            if len(entries) > max_entries:
                raise AgentError(
                    "ERR_PRISM_SANDBOX_EXPORT_LIMIT", f"workspace exceeds {max_entries} entries"
                )
        dirs.sort()
    return entries


def _serve_connection(agent: Agent, connection: socket.socket) -> None:
    write_lock = threading.Lock()
    reader = connection.makefile("rb")

    def answer(request: dict[str, Any]) -> None:
        try:
            reply: dict[str, Any] = {
                "id": request.get("id"),
                "ok": True,
                "result": agent.handle(request),
            }
        except AgentError as exc:
            reply = {
                "id": request.get("id"),
                "ok": False,
                "error": {"code": exc.code, "message": str(exc)},
            }
        except Exception as exc:  # any failure goes back as data, never kills the agent
            reply = {
                "id": request.get("id"),
                "ok": False,
                "error": {
                    "code": "ERR_PRISM_SANDBOX_AGENT",
                    "message": f"{type(exc).__name__}: {exc}",
                },
            }
        line = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
        with write_lock:
            try:
                connection.sendall(line)
            except OSError:
                pass

    for raw in reader:
        try:
            request = json.loads(raw)
        except ValueError:
            continue
        # start_new_thread does not wait for the thread to be scheduled
        # (Thread.start does): one fewer wake-up on every command's path.
        _thread.start_new_thread(answer, (request,))
    connection.close()


def _relay(listen_port: int, target: str) -> None:
    """127.0.0.1:listen_port inside the sandbox -> the host's egress proxy socket."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(64)
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            client.close()
            continue
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            chunk = source.recv(_READ_CHUNK)
            if not chunk:
                break
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _die_with_parent() -> None:
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def main(argv: list[str]) -> None:
    options = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if options.get("--die-with-parent"):
        _die_with_parent()
    # Thread stacks count against RLIMIT_AS: keep the agent's own footprint small.
    threading.stack_size(512 * 1024)
    global _CHILD_CPU_SECONDS
    for spec in filter(None, options.get("--rlimits", "").split(",")):
        name, value = spec.split(":")
        if name == "cpu":
            _CHILD_CPU_SECONDS = int(value)
            continue
        resource.setrlimit(_RLIMITS[name], (int(value), int(value)))
    os.umask(0o022)
    path = options["--socket"]
    if options.get("--egress-port"):
        relay = threading.Thread(
            target=_relay,
            args=(int(options["--egress-port"]), options["--egress-socket"]),
            daemon=True,
        )
        relay.start()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        if os.path.exists(path):
            os.unlink(path)
        server.bind(path + ".tmp")
        server.listen(16)
        os.rename(path + ".tmp", path)  # ready means listening
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        agent = Agent()
        while True:
            connection, _ = server.accept()
            threading.Thread(
                target=_serve_connection, args=(agent, connection), daemon=True
            ).start()


if __name__ == "__main__":
    main(sys.argv[1:])
