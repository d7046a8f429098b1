"""The ``prism`` command: print, json and rpc modes over an AgentSession.

``main`` is the console-script entry point. Usage problems (unknown flags,
bad values, an unreadable --config) print exactly one line on stderr and
return exit code 2; see docs/cli.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from prism.cli.contributions import HOST_CONTRIBUTIONS, HostContributions
from prism.cli.options import CliOptions, UsageProblem

if TYPE_CHECKING:
    from typing import BinaryIO

    from prism.extensions import CommandDefinition, ExtensionLike
    from prism.runtime import Agent

USAGE_EXIT_CODE = 2


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _usage_error(message: str) -> int:
    _say(f"prism: error: {_one_line(message)}\n")
    return USAGE_EXIT_CODE


def _say(line: str) -> None:
    """One line on stderr, unless stderr itself is closed (then the exit code
    is all there is to report)."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


_SUBCOMMANDS = {
    "bench": ("prism.cli.bench", "bench_main"),
    "eval": ("prism.cli.eval", "eval_main"),
    "init": ("prism.cli.init", "init_main"),
    "inspect": ("prism.cli.inspect", "inspect_main"),
    "providers": ("prism.cli.provider_config", "providers_main"),
    "sessions": ("prism.cli.sessions", "sessions_main"),
}


def main(
    argv: Sequence[str] | None = None,
    *,
    commands: Sequence[CommandDefinition] = (),
    extensions: Sequence[ExtensionLike] = (),
) -> int:
    """Run ``prism`` with ``argv``. A Python host that ships its own console
    script passes ``commands`` and ``extensions``: their commands join the
    built-ins on RPC ``command`` (see docs/cli.md)."""
    if sys.stdout is None:
        # Started with stdout closed (``prism ... >&-``): Python has no
        # sys.stdout at all, and every mode writes its results there.
        return _usage_error(
            "standard output is closed; prism writes its output there "
            "(redirect it to a file or /dev/null instead)"
        )
    token = HOST_CONTRIBUTIONS.set(HostContributions(tuple(commands), tuple(extensions)))
    closed_stdin = sys.stdin is None
    if closed_stdin:
        # Started with stdin closed (``<&-``): read it as empty, so rpc mode
        # sees EOF at once and the other modes never miss it.
        sys.stdin = open(os.devnull, encoding="utf-8")
    try:
        return _main(argv)
    finally:
        HOST_CONTRIBUTIONS.reset(token)
        if closed_stdin:
            sys.stdin.close()
            sys.stdin = None


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        subcommand = _SUBCOMMANDS.get(args[0]) if args else None
        if subcommand is not None:
            import importlib

            module, function = subcommand
            entry = getattr(importlib.import_module(module), function)
            return int(entry(args[1:]))
        from prism.cli.app import run

        return run(args)
    except UsageProblem as problem:
        return _usage_error(str(problem))
    except KeyboardInterrupt:
        _say("prism: error: aborted\n")
        return 130
    except Exception as exc:
        # A bug, not a usage problem: still one line unless PRISM_DEBUG asks
        # for the traceback.
        if os.environ.get("PRISM_DEBUG"):
            raise
        _say(f"prism: internal error: {_one_line(f'{type(exc).__name__}: {exc}')}\n")
        return 1


async def serve_rpc(
    agent: Agent,
    *,
    input: BinaryIO | None = None,
    output: BinaryIO | None = None,
    session: str | None = None,
    commands: Sequence[CommandDefinition] = (),
    extensions: Sequence[ExtensionLike] = (),
) -> int:
    """Serve the RPC protocol of ``prism --mode rpc`` (docs/cli.md) for a
    host's own ``agent``: requests are LF-delimited JSON read from ``input``
    (default stdin), responses and events are written to ``output`` (default
    stdout), both binary streams. Returns 0 at EOF once active runs finish.

    ``session`` names the first session (default: a new id); ``commands``
    and ``extensions`` contribute RPC commands as for :func:`main`. Bad
    arguments, a failing extension or a clashing command raise
    ``ConfigError`` before anything is read."""
    from prism.cli.rpc import serve_agent

    return await serve_agent(
        agent,
        input=input if input is not None else sys.stdin.buffer,
        output=output if output is not None else sys.stdout.buffer,
        session=session,
        contributions=HostContributions(tuple(commands), tuple(extensions)),
    )


__all__ = ["CliOptions", "UsageProblem", "main", "serve_rpc"]
