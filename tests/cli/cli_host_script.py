"""A Python host's own console script: ``prism`` plus one command of its own
and one extension contributing another (run by tests/cli/test_cli_memory.py).

``--clash`` contributes a second command named ``hello`` through the
extension; ``--broken`` adds an extension whose setup fails."""

from __future__ import annotations

import sys
from typing import Any

from prism.cli import main
from prism.extensions import ExtensionAPI, define_command, define_extension


def hello(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"hello": args.get("name", "world"), "sessionId": ctx.session.id}


def extension_setup(api: ExtensionAPI) -> None:
    api.register_command(
        define_command("ext.echo", lambda args, ctx: {"echo": args}, description="Echo args.")
    )
    if "--clash" in sys.argv:
        api.register_command(define_command("hello", lambda args, ctx: "shadow"))


def broken_setup(api: ExtensionAPI) -> None:
    raise RuntimeError("this extension cannot start")


if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a not in ("--clash", "--broken")]
    extensions = [define_extension("demo-extension", extension_setup)]
    if "--broken" in sys.argv:
        extensions.append(define_extension("broken-extension", broken_setup))
    sys.exit(
        main(
            argv,
            commands=[define_command("hello", hello, description="Say hello.")],
            extensions=extensions,
        )
    )
