"""Forks the DBOS crash matrix's processes from one that has already
imported DBOS, Prism and the scenario: importing them is most of a child's
CPU time, and the matrix starts 120 of them.

The protocol is zygote.py's ``serve_forks``; a request's arguments are
``dbos_child.py``'s (``run ...`` or ``recover ...``). Nothing DBOS or anyio
starts exists before the fork: this process only imports. A child still
running after 180 s is ended by its own alarm.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import dbos_child
from zygote import serve_forks


def run(args: list[str]) -> None:
    mode, *rest = args
    if mode == "run":
        dbos_child.run(*rest)
    else:
        dbos_child.recover(*rest[:5], rest[5] if len(rest) > 5 else None)


if __name__ == "__main__":
    serve_forks(run, timeout=180)
