"""A forking server for the crash matrices' child processes: the process
imports Prism (and whatever the child module needs) once, then forks one
child per request, so each case skips the interpreter start and the imports
that were most of a child's CPU time.

Reads one JSON request a line on stdin, ``{"args": [...], "out": PATH}``;
forks a child that calls ``run(args)`` with its stdout and stderr in
``PATH``, waits for it, and answers ``{"returncode": N}`` (negative: the
signal that ended it, as subprocess reports it). Nothing but imports happens
before the fork. A child still running after ``timeout`` seconds is ended by
its own alarm (SIGALRM). End of stdin ends the server.
:class:`ZygoteClient` is the tests' side of that protocol.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path


def _serve_one(run: Callable[[list[str]], None], args: list[str], out: str, timeout: int) -> None:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    signal.alarm(timeout)
    code = 0
    try:
        run(args)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve_forks(run: Callable[[list[str]], None], timeout: int = 120) -> None:
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _serve_one(run, request["args"], request["out"], timeout)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        sys.stdout.flush()


class ZygoteClient:
    """Starts a ``serve_forks`` process (``command``) and asks it for one
    forked child per :meth:`run`."""

    def __init__(self, command: list[str], pythonpath: str) -> None:
        self.process = subprocess.Popen(
            command,
            env={**os.environ, "PYTHONPATH": pythonpath},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, out: Path, *args: str) -> tuple[int, str]:
        """(returncode, stdout and stderr in ``out``) of one child run with ``args``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"args": list(args), "out": str(out)}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the zygote died (exit {self.process.wait()})")
        output = out.read_text(errors="replace") if out.exists() else ""
        return int(json.loads(answer)["returncode"]), output

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
