"""Two third-party OpenAI-compatible servers from PyPI, run as real processes.

``fakellm`` answers from YAML rules (text, tool calls); ``llmock`` injects
faults (HTTP errors with Retry-After, stalls, disconnects, truncated and
malformed SSE, broken tool arguments) scripted per request through its
``/_llmock`` control API, and judges the client from its request journal.

Each server is started by the tests on a free loopback port, waited for by
polling its health endpoint (a bounded loop: the pause between polls is a
wait on the process itself, so a server that dies at startup fails at once
with its stderr), and stopped in teardown.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

STARTUP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.05


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """A server subprocess on 127.0.0.1; ``url`` is its root."""

    def __init__(
        self, name: str, argv: Sequence[str], *, port: int, health_path: str, cwd: Path
    ) -> None:
        self.name = name
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._log = tempfile.TemporaryFile(mode="w+b")  # closed in stop()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
        # Never let a real provider key reach a mock server's environment.
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            env.pop(key, None)
        self._process = subprocess.Popen(
            [sys.executable, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_ready(health_path)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, health_path: str) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + health_path, timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            try:
                code = self._process.wait(timeout=POLL_INTERVAL_S)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"{self.name} exited with {code} at startup:\n{self.output()}")
        raise RuntimeError(
            f"{self.name} not ready on {self.url} after {STARTUP_TIMEOUT_S:.0f} s:\n{self.output()}"
        )

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._log.close()


def start_fakellm(config_yaml: str, workdir: Path) -> ServerProcess:
    """``fakellm serve`` with ``config_yaml`` as its rule file."""
    config = workdir / "fakellm.yaml"
    config.write_text(config_yaml, encoding="utf-8")
    port = free_port()
    argv = ["-m", "fakellm.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--config", str(config)]
    return ServerProcess("fakellm", argv, port=port, health_path="/_fakellm/stats", cwd=workdir)


def start_llmock(workdir: Path) -> ServerProcess:
    """``llmock serve`` with no random chaos: faults are scripted per test."""
    port = free_port()
    argv = ["-m", "llmock.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--log-level", "warning", "--response-style", "static"]
    return ServerProcess("llmock", argv, port=port, health_path="/health", cwd=workdir)


class LLMockControl:
    """The ``/_llmock`` control API of a running llmock server."""

    def __init__(self, server: ServerProcess) -> None:
        self.url = server.url
        self._http = httpx.Client(base_url=server.url + "/_llmock", timeout=10.0)

    def reset(self) -> None:
        self._http.post("/reset").raise_for_status()

    def script(self, *behaviors: dict[str, Any]) -> None:
        """Queue behaviours (``{"type": "fail", "status": 429, ...}``) for coming requests."""
        self._http.post("/scenario", json={"behaviors": list(behaviors)}).raise_for_status()

    def clear_script(self) -> None:
        """Drop behaviours no request consumed (the journal is kept)."""
        self._http.delete("/scenario").raise_for_status()

    def pending(self) -> list[dict[str, Any]]:
        pending: list[dict[str, Any]] = self._http.get("/scenario").json()["pending"]
        return pending

    def requests(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self._http.get("/requests").json()["requests"]
        return records

    def verdict(self) -> dict[str, Any]:
        verdict: dict[str, Any] = self._http.get("/verdict").json()
        return verdict

    def verdict_text(self) -> str:
        return self._http.get("/verdict", params={"format": "text"}).text

    def close(self) -> None:
        self._http.close()
