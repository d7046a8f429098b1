"""``prism sessions``: the sessions in the CLI's session file, the ones with
an unfinished durable run (``--unfinished``), and resuming those
(``--resume-all``), as a worker does when it starts after a crash.

    prism sessions [--unfinished] [--json]
    prism sessions --resume-all [--json] [--provider NAME] [--model NAME]
                   [--base-url URL] [--api-key-env NAME] [--agent MODULE:FACTORY]

``--resume-all`` resumes each unfinished run in turn with the agent the
flags describe (as ``prism --resume`` would), prints one line per session
(``resumed ID`` or ``failed ID: reason``) and exits 1 when any failed; the
others are resumed all the same.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import anyio

from prism.cli.options import UsageProblem, build_options, default_session_file

# build_options wants a session for --resume; resume_all names its own.
_ANY_SESSION = "prism-sessions"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageProblem(f"sessions: {message}")


def _parser() -> _Parser:
    parser = _Parser(prog="prism sessions", add_help=True, allow_abbrev=False)
    add = parser.add_argument
    add("--unfinished", action="store_true", help="Only sessions with an unfinished durable run.")
    add("--resume-all", action="store_true", help="Resume every unfinished durable run.")
    add("--json", action="store_true", help="One JSON document instead of lines.")
    add("--provider", metavar="NAME", help="Provider for --resume-all (default: mock).")
    add("--model", metavar="NAME", help="Model for --resume-all.")
    add("--base-url", metavar="URL", help="Endpoint of an OpenAI-compatible server.")
    add("--api-key-env", metavar="NAME", help="Environment variable holding the API key.")
    add("--agent", metavar="MODULE:FACTORY", help="Resume with the agent this factory returns.")
    return parser


def sessions_main(args: Sequence[str]) -> int:
    parsed = _parser().parse_args(list(args))
    if parsed.resume_all:
        return anyio.run(_resume_all, parsed)
    if any(getattr(parsed, f) is not None for f in ("provider", "model", "base_url", "agent")):
        raise UsageProblem(
            "sessions: --provider, --model, --base-url and --agent need --resume-all"
        )
    return anyio.run(_list, parsed)


async def _list(parsed: argparse.Namespace) -> int:
    from prism.runtime.recovery import unfinished_sessions
    from prism.stores.jsonl import create_jsonl_session_store

    path = default_session_file()
    ids: list[str] = []
    if path.exists():
        store = create_jsonl_session_store(path, create_directory=False)
        ids = await (unfinished_sessions(store) if parsed.unfinished else store.list_sessions())
    if parsed.json:
        sys.stdout.write(json.dumps({"sessions": ids}) + "\n")
    else:
        sys.stdout.write("".join(f"{sid}\n" for sid in ids))
    return 0


async def _resume_all(parsed: argparse.Namespace) -> int:
    from prism.cli.host import create_host
    from prism.cli.providers import known_provider_names

    options = build_options(
        mode="print",
        prompt=None,
        provider=parsed.provider,
        model=parsed.model,
        session=_ANY_SESSION,
        config=None,
        resources=None,
        extensions=None,
        tools=None,
        system=None,
        context=None,
        compact=None,
        max_tool_rounds=None,
        mock_delay_ms=None,
        known_providers=known_provider_names,
        base_url=parsed.base_url,
        api_key_env=parsed.api_key_env,
        agent=parsed.agent,
        resume=True,
    )
    host = create_host(options)
    await host.start()
    store = host.session_file_store
    assert store is not None  # a session is named, so the file is the store
    report = await host.agent.resume_all(store)
    if parsed.json:
        sys.stdout.write(json.dumps(_json_report(report)) + "\n")
    else:
        for sid in report.resumed:
            sys.stdout.write(f"resumed {sid}\n")
        for sid, info in report.failed.items():
            sys.stdout.write(f"failed {sid}: {' '.join(str(info.get('message')).split())}\n")
    return 0 if report.ok else 1


def _json_report(report: Any) -> dict[str, Any]:
    return {
        "resumed": sorted(report.resumed),
        "failed": {sid: dict(info) for sid, info in report.failed.items()},
    }
