"""The sandbox examples run as docs/sandboxes.md shows: the native one on
bubblewrap, the Docker one against the session's private engine."""

from __future__ import annotations

import os

from example_runner import run_example
from tests.docker_engine import DockerEngineServer


def test_native_sandbox_example() -> None:
    out = run_example("sandbox_native.py").stdout.splitlines()
    assert out == [
        "backend: native-bwrap | filesystem isolated: True",
        "runs as root: False",
        "host /etc/shadow readable: False",
        "file in the workspace: ship it",
        "a command that never ends hit: timeout",
        "process output: 42",
        "allow-listed server: hello",
        "anything else: blocked: 403",
        "egress decisions: ['allow', 'deny']",
    ]


def test_docker_sandbox_example(docker_engine: DockerEngineServer) -> None:
    done = run_example("sandbox_docker.py", env={**os.environ, "DOCKER_HOST": docker_engine.host})
    assert done.stdout.splitlines() == [
        "backend: docker | re-attach: True",
        "imported entries: 1",
        "hello from the container",
        "writes to /etc: /bin/sh: can't create /etc/x: Read-only file system",
        "fork bomb hit: processes",
        "re-attached output: ['seen one', 'seen two']",
        "exported entries: 1 sha256: True",
    ]


def test_sandbox_coding_example() -> None:
    out = run_example("sandbox_coding.py").stdout.splitlines()
    assert out == [
        "capabilities: native-bwrap True",
        "w: ok",
        "e: ok",
        "s: ok",
        "x: ok",
        "a: ok",
        "c: ok",
        "escape: refused",
        "final: add() works and is committed.",
        "git log in the sandbox: ['add']",
        "host view stays empty: True",
    ]
