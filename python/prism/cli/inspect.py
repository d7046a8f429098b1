"""``prism inspect``: serve the web inspector over a session store, or
export one session as a self-contained HTML report (docs/inspect.md)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

import anyio

from prism.cli.options import UsageProblem

USAGE = (
    "prism inspect [PATH | --store URL] [--session ID] [--follow] [--export FILE] "
    "[--host ADDR] [--port N] [--allow-remote-bind] [--open] [--secret-env NAME]..."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageProblem(f"inspect: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="prism inspect", usage=USAGE, add_help=True)
    parser.add_argument("path", nargs="?", help="a JSONL session file or a SQLite database")
    parser.add_argument("--store", help="a store URL (postgresql://...)")
    parser.add_argument("--session", help="the session to open (default: the first)")
    parser.add_argument("--follow", action="store_true", help="open the session with its live tail")
    parser.add_argument("--export", metavar="FILE", help="write one HTML report and exit")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (loopback)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument(
        "--allow-remote-bind", action="store_true", help="allow a non-loopback --host"
    )
    parser.add_argument("--open", action="store_true", help="open the URL in a browser")
    parser.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="mask the value of this environment variable everywhere (repeatable)",
    )
    return parser


def inspect_main(args: Sequence[str]) -> int:
    options = _parser().parse_args(list(args))
    target = options.store or options.path
    if not target or (options.store and options.path):
        raise UsageProblem("inspect: give one session file, database path or --store URL")
    from prism.inspect import InspectError
    from prism.security.redaction import create_redactor

    missing = [name for name in options.secret_env if not os.environ.get(name)]
    if missing:
        raise UsageProblem(f"inspect: --secret-env {missing[0]} is not set in the environment")
    redactor = create_redactor([os.environ[name] for name in options.secret_env])
    try:
        if options.export:
            return anyio.run(_export, target, options, redactor)
        return anyio.run(_serve, target, options, redactor)
    except KeyboardInterrupt:
        sys.stdout.write("prism inspect: stopped\n")  # Ctrl-C is how a server ends
        return 0
    except InspectError as exc:
        sys.stderr.write(f"prism: error: {redactor.redact_text(str(exc))}\n")
        return 1


async def _export(target: str, options: argparse.Namespace, redactor: object) -> int:
    from prism.inspect import export_html, open_source

    source = await open_source(target)
    try:
        session = options.session or next(iter(await source.sessions()), None)
        if session is None:
            sys.stderr.write(f"prism: error: {source.label} holds no sessions\n")
            return 1
        await export_html(source, session, options.export, redactor=redactor)  # type: ignore[arg-type]
    finally:
        await source.aclose()
    sys.stdout.write(f"prism inspect: wrote {options.export} (session {session})\n")
    return 0


async def _serve(target: str, options: argparse.Namespace, redactor: object) -> int:
    from prism.inspect import InspectorAddress, open_source, serve_inspector

    follow = options.session
    if options.follow and follow is None:
        source = await open_source(target)
        try:
            sessions = await source.sessions()
        finally:
            await source.aclose()
        follow = sessions[-1] if sessions else None

    def ready(address: InspectorAddress) -> None:
        sys.stdout.write(f"prism inspect: serving {target} at {address.url}\n")
        sys.stdout.write("prism inspect: read-only; press Ctrl-C to stop\n")
        sys.stdout.flush()
        if options.open:
            import webbrowser

            webbrowser.open(address.url)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _warn_line
        await serve_inspector(
            target,
            host=options.host,
            port=options.port,
            follow=follow,
            allow_remote=options.allow_remote_bind,
            redactor=redactor,  # type: ignore[arg-type]
            on_ready=ready,
            freeze_gc=True,
        )
    return 0


def _warn_line(message: object, *args: object, **kwargs: object) -> None:
    sys.stderr.write(f"prism: warning: {message}\n")
