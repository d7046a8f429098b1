"""What every backend does, on both: commands, processes, the workspace tar,
file operations and egress through the host's allow-list proxy."""

from __future__ import annotations

import io
import tarfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from prism.sandbox import (
    ERR_PROCESS_ATTACH,
    ERR_SANDBOX_TAR_ENTRY,
    SandboxError,
    SandboxPathError,
    create_egress_policy,
)
from prism.sandbox.base import AgentSandbox
from prism.sandbox.filesystem import create_sandbox_filesystem_operations

pytestmark = pytest.mark.anyio
SandboxFactory = Callable[..., Awaitable[AgentSandbox]]
PY = "/usr/bin/python3"


async def test_exec_file_reports_status_streams_and_truncation(sandbox: AgentSandbox) -> None:
    result = await sandbox.exec_file("sh", ["-c", "echo out; echo err >&2; exit 3"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert result.limit is None and not result.ok
    capped = await sandbox.exec_file("head", ["-c", "5000", "/dev/zero"], output_cap=100)
    assert len(capped.stdout) == 100 and capped.stdout_truncated and capped.limit == "output"
    echoed = await sandbox.exec_file("cat", stdin="from stdin")
    assert echoed.stdout_text == "from stdin"
    env = await sandbox.exec_file(
        "sh", ["-c", "echo $GREETING; pwd"], env={"GREETING": "hi"}, cwd="/tmp"
    )
    assert env.stdout_text == "hi\n/tmp\n"
    shell = await sandbox.exec("echo a && echo b | tr b c")
    assert shell.stdout_text == "a\nc\n"


async def test_exec_file_errors_are_clear(sandbox: AgentSandbox) -> None:
    with pytest.raises(SandboxError, match="no-such-program: not found"):
        await sandbox.exec_file("no-such-program")
    with pytest.raises(SandboxError, match=r"not a directory|not found"):
        await sandbox.exec_file("true", cwd="/workspace/missing")
    with pytest.raises(SandboxError, match="sequence of strings"):
        await sandbox.exec_file("echo", "one string")  # type: ignore[arg-type]
    assert (await sandbox.exec_file("true")).ok  # the sandbox is still fine


async def test_processes_stream_take_stdin_and_stop(sandbox: AgentSandbox) -> None:
    process = await sandbox.start_process(
        "sh", ["-c", "while read l; do echo got $l; done; echo bye"]
    )
    await process.write("one\n")
    await process.write("two\n", close=True)
    state = await process.wait(20)
    assert not state.running and state.exit_code == 0
    output = await process.read()
    assert output.text == "got one\ngot two\nbye\n" and not output.dropped
    assert (await process.read()).data == b""  # the offset moved on
    sleeper = await sandbox.start_process("sleep", ["1000"])
    assert (await sleeper.wait(0.1)).running
    stopped = await sleeper.kill()
    assert (await sleeper.wait(10)).signal == 9 or stopped.signal == 9
    await sleeper.release()
    with pytest.raises(SandboxError) as gone:
        await sandbox.attach_process(sleeper.ref)
    assert gone.value.code == ERR_PROCESS_ATTACH


async def test_the_ring_buffer_drops_old_output(sandbox: AgentSandbox) -> None:
    process = await sandbox.start_process("sh", ["-c", "seq 1 20000"], buffer_bytes=1000)
    await process.wait(20)
    output = await process.read()
    assert output.dropped and len(output.data) <= 1000
    assert output.text.endswith("19999\n20000\n")


async def test_refs_from_another_sandbox_are_refused(sandbox_factory: SandboxFactory) -> None:
    first, second = await sandbox_factory(), await sandbox_factory()
    process = await first.start_process("sleep", ["1000"])
    assert (await first.attach_process(process.ref)).id == process.id
    with pytest.raises(SandboxError, match="another sandbox") as caught:
        await second.attach_process(process.ref)
    assert caught.value.code == ERR_PROCESS_ATTACH


def _tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def test_workspace_tar_round_trip_and_hostile_entries(sandbox: AgentSandbox) -> None:
    identity = await sandbox.import_tar(_tar_of({"src/app.py": b"print(1)\n", "README": b"hi"}))
    assert identity.entries == 2 and sandbox.import_identity == identity
    assert (await sandbox.exec("cat src/app.py")).stdout_text == "print(1)\n"
    data, exported = await sandbox.export_tar()
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert names == ["README", "src", "src/app.py"] and exported.bytes == 11
    assert sandbox.last_export_identity == exported
    slip = io.BytesIO()
    with tarfile.open(fileobj=slip, mode="w") as archive:
        archive.addfile(tarfile.TarInfo("../../etc/evil"), io.BytesIO(b""))
    with pytest.raises(SandboxError, match=r"'\.\.'"):
        await sandbox.import_tar(slip.getvalue())
    await sandbox.exec("ln -s /etc/passwd src/leak")
    with pytest.raises(SandboxError, match="src/leak: symlink refused") as caught:
        await sandbox.export_tar()
    assert caught.value.code == ERR_SANDBOX_TAR_ENTRY


async def test_filesystem_operations_stay_in_the_workspace(sandbox: AgentSandbox) -> None:
    fs = create_sandbox_filesystem_operations(sandbox)
    await fs.write_file("pkg/mod.py", "x = 1\n")
    assert await fs.read_file("pkg/mod.py") == b"x = 1\n"
    info = await fs.stat("pkg/mod.py")
    assert info is not None and info.type == "file" and info.size == 6
    assert await fs.stat("nope") is None
    assert [(e.name, e.type) for e in await fs.list_dir(".")] == [("pkg", "directory")]
    assert (await fs.exec_file(["cat", "mod.py"], cwd="pkg")).stdout_text == "x = 1\n"
    for outside in ("../etc/passwd", "/etc/passwd", "pkg/../../x"):
        with pytest.raises(SandboxPathError):
            await fs.read_file(outside)
    await sandbox.exec("ln -s /etc escape")
    with pytest.raises(SandboxPathError, match="resolves outside"):
        await fs.write_file("escape/owned", "x")
    with pytest.raises(SandboxPathError):
        await fs.remove(".", recursive=True)
    await fs.remove("pkg", recursive=True)
    with pytest.raises(FileNotFoundError):
        await fs.read_file("pkg/mod.py")


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_servers() -> Iterator[tuple[int, int]]:
    """Two servers on the host's loopback: one to allow, one not."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Hello) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()
        server.server_close()


FETCH = (
    "import sys, urllib.request\n"
    "try: print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n"
    "except Exception as e: print('blocked', getattr(e, 'code', e))\n"
)
CONNECT = (
    "import socket, sys\n"
    "s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
    "s.sendall(f'CONNECT 127.0.0.1:{sys.argv[1]} HTTP/1.1\\r\\n\\r\\n'.encode())\n"
    "reply = s.recv(4096)\n"
    "if b' 200 ' in reply.split(b'\\r\\n')[0]:\n"
    "    s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); data = b''\n"
    "    while chunk := s.recv(4096): data += chunk\n"
    "    reply = data.split(b'\\r\\n\\r\\n', 1)[1] + b'\\n'\n"
    "print(reply.decode(), end='')\n"
)
DIRECT = (
    "import socket, sys\n"
    "try: socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); print('connected')\n"
    "except OSError as e: print('blocked', e.errno)\n"
)


async def test_egress_allows_exactly_the_allow_list(
    sandbox_factory: SandboxFactory, http_servers: tuple[int, int]
) -> None:
    allowed, other = http_servers
    events: list[dict[str, Any]] = []
    policy = create_egress_policy(
        [
            {"host": "127.0.0.1", "port": allowed, "protocol": "http"},
            {"host": "127.0.0.1", "port": other, "protocol": "https"},
        ]
    )
    sandbox = await sandbox_factory(egress=policy, on_event=events.append)
    ok = await sandbox.exec_file(PY, ["-c", FETCH, f"http://127.0.0.1:{allowed}/"])
    assert ok.stdout_text == f"hello from {allowed}\n"
    denied = await sandbox.exec_file(PY, ["-c", FETCH, f"http://127.0.0.1:{other}/"])
    assert denied.stdout_text == "blocked 403\n"  # that port is allowed for https only
    tunnel = await sandbox.exec_file(PY, ["-c", CONNECT, str(other)])
    assert tunnel.stdout_text.endswith(f"hello from {other}\n")  # an opaque tunnel
    wrong = await sandbox.exec_file(PY, ["-c", CONNECT, str(allowed)])
    assert "403" in wrong.stdout_text  # https is another protocol there: not allowed
    direct = await sandbox.exec_file(PY, ["-c", DIRECT, str(allowed)])
    assert direct.stdout_text.startswith("blocked")  # only the proxy leads out
    decisions = [(e["decision"], e["port"], e["protocol"]) for e in events]
    assert decisions == [
        ("allow", allowed, "http"),
        ("deny", other, "http"),
        ("allow", other, "https"),
        ("deny", allowed, "https"),
    ]
    assert {e["policyFingerprint"] for e in events} == {policy.fingerprint}


async def test_without_a_policy_there_is_no_way_out(
    sandbox: AgentSandbox, http_servers: tuple[int, int]
) -> None:
    allowed, _ = http_servers
    env = await sandbox.exec_file("env")
    assert "PROXY" not in env.stdout_text.upper()
    direct = await sandbox.exec_file(PY, ["-c", DIRECT, str(allowed)])
    assert direct.stdout_text.startswith("blocked")
