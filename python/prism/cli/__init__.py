"""The ``prism`` command: print, json and rpc modes over an AgentSession.

``main`` is the console-script entry point. Usage problems (unknown flags,
bad values, an unreadable --config) print exactly one line on stderr and
return exit code 2; see docs/cli.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer
import typer.main

from prism.cli.options import CliOptions, UsageProblem

USAGE_EXIT_CODE = 2


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _usage_error(message: str) -> int:
    sys.stderr.write(f"prism: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return USAGE_EXIT_CODE


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["bench"]:
        from prism.cli.bench import bench_main

        return bench_main(args[1:])
    from prism.cli.app import app

    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="prism", standalone_mode=False)
    except UsageProblem as problem:
        return _usage_error(str(problem))
    except typer.Abort:
        sys.stderr.write("prism: error: aborted\n")
        return 1
    except typer.TyperException as exc:
        code = getattr(exc, "exit_code", 1)
        if code == USAGE_EXIT_CODE:
            return _usage_error(exc.format_message())
        sys.stderr.write(f"prism: error: {_one_line(exc.format_message())}\n")
        return int(code)
    except Exception as exc:
        # A bug, not a usage problem: still one line unless PRISM_DEBUG asks
        # for the traceback.
        if os.environ.get("PRISM_DEBUG"):
            raise
        sys.stderr.write(f"prism: internal error: {_one_line(f'{type(exc).__name__}: {exc}')}\n")
        return 1
    # standalone_mode=False returns the Exit code (or None after --help).
    return int(result) if isinstance(result, int) else 0


__all__ = ["CliOptions", "UsageProblem", "main"]
