"""Fixtures that drive the installed ``prism`` executable in a subprocess.

Every test talks to the real console script next to ``sys.executable``.
RPC tests are interactive: write one line, read lines until the expected
response. Timeouts are safety nets only; nothing waits on a clock.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SAFETY_TIMEOUT = 60.0


def prism_executable() -> Path:
    exe = Path(sys.executable).parent / "prism"
    if not exe.exists():
        pytest.fail(f"the prism console script is not installed next to {sys.executable}")
    return exe


@pytest.fixture
def prism_home(tmp_path: Path) -> Path:
    return tmp_path / "prism-home"


@pytest.fixture
def cli_env(prism_home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("PRISM_HOME", "XDG_DATA_HOME")
    }
    env["PRISM_HOME"] = str(prism_home)
    return env


def run_prism(
    env: dict[str, str], *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(prism_executable()), *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


class RpcClient:
    """One ``prism --mode rpc`` process; a reader thread queues stdout lines."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(prism_executable()), "--mode", "rpc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._start_reader()

    def _start_reader(self) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, request: dict[str, Any]) -> None:
        self.send_raw(json.dumps(request).encode() + b"\n")

    def next_message(self) -> dict[str, Any]:
        line = self.lines.get(timeout=SAFETY_TIMEOUT)
        if line is None:
            raise AssertionError("prism exited while a reply was expected")
        self.raw.append(line)
        assert line.endswith(b"\n"), line
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    def until_response(self, request_id: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Messages up to and including the response with ``request_id``."""
        seen: list[dict[str, Any]] = []
        while True:
            message = self.next_message()
            if "ok" in message and message.get("id") == request_id:
                return seen, message
            seen.append(message)

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send and return the response; anything before it must be events."""
        self.send(request)
        before, response = self.until_response(request["id"])
        assert all(m.get("type") == "event" for m in before), before
        return response

    def until_event(self, request_id: Any, event_type: str) -> dict[str, Any]:
        while True:
            message = self.next_message()
            if message.get("type") == "event" and message["event"]["type"] == event_type:
                assert message["id"] == request_id
                return message

    def close(self) -> tuple[int, list[dict[str, Any]], bytes]:
        """Close stdin (EOF) and return exit code, remaining messages, stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest: list[dict[str, Any]] = []
        while True:
            line = self.lines.get(timeout=SAFETY_TIMEOUT)
            if line is None:
                break
            self.raw.append(line)
            rest.append(json.loads(line))
        code = self.proc.wait(timeout=SAFETY_TIMEOUT)
        assert self.proc.stderr is not None
        return code, rest, self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=SAFETY_TIMEOUT)


@pytest.fixture
def rpc(cli_env: dict[str, str]) -> Iterator[Any]:
    """A factory: ``rpc(*extra_args)`` starts a client; all are killed at teardown."""
    clients: list[RpcClient] = []

    def start(*args: str) -> RpcClient:
        client = RpcClient(cli_env, *args)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.kill()
        for stream in (client.proc.stdin, client.proc.stdout, client.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def prism_run(cli_env: dict[str, str]) -> Any:
    """``prism_run(*args, stdin=b"")`` -> CompletedProcess of the installed script."""

    def call(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return run_prism(cli_env, *args, stdin=stdin)

    return call


@pytest.fixture(scope="module")
def shared_rpc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RpcClient]:
    """One rpc process for a whole module (the fuzz reuses it for every example).
    At teardown it must exit 0 on EOF with nothing left unanswered."""
    home = tmp_path_factory.mktemp("prism-home")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PRISM_HOME"] = str(home)
    client = RpcClient(env)
    try:
        yield client
        code, rest, stderr = client.close()
        assert (code, rest, stderr) == (0, [], b"")
    finally:
        client.kill()
