"""Forks the DBOS crash matrix's processes from one that has already
imported DBOS, Prism and the scenario: importing them is most of a child's
CPU time, and the matrix starts 120 of them.

Reads one JSON request a line on stdin, ``{"args": [...], "out": PATH}``
(the arguments of ``dbos_child.py``); forks a child that runs them with its
stdout and stderr in ``PATH``, waits for it, and answers
``{"returncode": N}`` (negative: the signal that ended it, as subprocess
reports it). Nothing DBOS or anyio starts exists before the fork: this
process only imports. A child still running after 180 s is ended by its
own alarm (SIGALRM). End of stdin ends the process.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import dbos_child


def serve_one(args: list[str], out: str) -> None:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    signal.alarm(180)
    code = 0
    try:
        mode, *rest = args
        if mode == "run":
            dbos_child.run(*rest)
        else:
            dbos_child.recover(*rest[:5], rest[5] if len(rest) > 5 else None)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            serve_one(request["args"], request["out"])
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
