"""A private Docker Engine for tests, benches and example runs.

``dockerd`` with its own data root, exec root, pidfile and socket in a temp
directory, no bridge and no iptables rules (sandbox containers run with
``--network none``), stopped by its pid. The sandbox image is imported into
it once (``prism.sandbox.image``), never pulled. A missing ``dockerd`` is an
error naming the package to install (``.ci/install-sandbox`` installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path


class DockerEngineError(RuntimeError):
    pass


class DockerEngineServer:
    def __init__(self) -> None:
        self.dockerd = shutil.which("dockerd")
        if self.dockerd is None or shutil.which("docker") is None:
            raise DockerEngineError(
                "dockerd/docker not found: install the Docker Engine (Debian: docker.io; "
                ".ci/install-sandbox does it)"
            )
        # Short: a Unix socket path must fit in 108 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="pdk-", dir="/tmp"))
        self.socket = self.root / "sock"
        self.host = f"unix://{self.socket}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 60.0) -> None:
        assert self.dockerd is not None
        log = (self.root / "dockerd.log").open("wb")
        self.process = subprocess.Popen(
            [
                self.dockerd,
                "--data-root",
                str(self.root / "data"),
                "--exec-root",
                str(self.root / "exec"),
                "--pidfile",
                str(self.root / "dockerd.pid"),
                "--host",
                self.host,
                "--bridge",
                "none",
                "--iptables=false",
                "--ip6tables=false",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        env = {**os.environ, "DOCKER_HOST": self.host}
        deadline = time.monotonic() + wait
        delay = 0.05
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DockerEngineError(f"dockerd exited: {self.log_tail()}")
            probe = subprocess.run(
                ["docker", "version", "--format", "{{.Server.Version}}"],
                env=env,
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                return
            time.sleep(delay)  # readiness poll of a service we started, not a test wait
            delay = min(delay * 2, 0.5)
        raise DockerEngineError(f"dockerd did not answer within {wait}s: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.root / "dockerd.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            env = {**os.environ, "DOCKER_HOST": self.host}
            ids = subprocess.run(
                ["docker", "ps", "-aq"], env=env, capture_output=True, text=True, check=False
            ).stdout.split()
            if ids:
                subprocess.run(
                    ["docker", "rm", "-f", *ids], env=env, capture_output=True, check=False
                )
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        subprocess.run(["umount", "-R", str(self.root / "data")], capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
