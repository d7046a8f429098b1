"""The flags of ``prism``: argv in, a validated CliOptions out, then one mode
runs.

Parsing uses the standard library's argparse rather than typer: typer's
import alone (it coerces through pydantic) cost more than the whole 120 ms
budget of ``prism -p hi`` (docs/performance.md, "A fast command"). argparse's
own error exits are turned into ``UsageProblem`` so every usage error stays
one plain stderr line with exit code 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from prism.cli.options import MAX_MOCK_DELAY_MS, UsageProblem, build_options

DESCRIPTION = (
    "Run a Prism agent session from the terminal. print mode writes the "
    "assistant's text, json mode one event envelope per line, rpc mode "
    "speaks LF-delimited JSON on stdin/stdout. See docs/cli.md."
)
EPILOG = (
    "Also: prism init DIR [--template NAME] (a starter project), "
    "prism providers add|list (configured providers), "
    "prism eval run|compare (eval suites and their reports), "
    "prism bench attention [--turns N] [--seed N] [--json] (the attention compiler's savings)."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageProblem(_translate(message))


_MISSING_VALUE = re.compile(r"argument ([^:]+): expected one argument")
_UNKNOWN = re.compile(r"unrecognized arguments: (.*)")


def _translate(message: str) -> str:
    """argparse's wording -> the CLI's (which the tests and docs pin)."""
    if match := _MISSING_VALUE.fullmatch(message):
        return f"option {match.group(1)} requires an argument"
    if match := _UNKNOWN.fullmatch(message):
        extra = match.group(1).split()
        first = extra[0]
        if first.startswith("-"):
            return f"No such option: {first}"
        return f"unexpected extra argument ({' '.join(extra)})"
    return message


# Every flag, in the order ``--help`` lists them: (names, argparse options).
_Flag = tuple[tuple[str, ...], dict[str, Any]]


def _value(*names: str, metavar: str, help: str, **options: Any) -> _Flag:
    return names, {"metavar": metavar, "help": help, **options}


def _switch(*names: str, help: str) -> _Flag:
    return names, {"action": "store_true", "help": help}


_FLAGS: tuple[_Flag, ...] = (
    _switch("-h", "--help", help="Show this message and exit."),
    # What one run is: prompt, mode, provider, model, session, config file.
    _value("-p", "--prompt", metavar="TEXT", help="Prompt for print/json modes."),
    _value("--mode", metavar="print|json|rpc", default="print", help="print, json or rpc."),
    _value("--provider", metavar="NAME", help="mock (default), a preset or a configured provider."),
    _value("--model", metavar="NAME", help="Model name."),
    _value("--session", metavar="ID", help="Session id; persisted to the JSONL session file."),
    _value("--config", metavar="PATH", help="JSON config file to read (only when given)."),
    # Flags the CLI records but does not load (docs/cli.md).
    _value("--resource", metavar="URI", action="append", help="Resource URI (recorded, not loaded)."),
    _value("--extension", metavar="NAME", action="append", help="Extension name (recorded, not imported)."),
    _value("--tool", metavar="NAME", action="append", help="Tool name (recorded, not enabled)."),
    # Instructions.
    _value("--system", metavar="TEXT", help="System instructions."),
    _value("--context", metavar="TEXT", help="Context text added to each request."),
    # Compaction and the tool-round bound.
    _value("--compact", metavar="N", type=int, help="Auto-compact once the session has this many entries."),
    _value("--compaction", metavar="default|llm", help="Compaction strategy: default (no model call) or llm (the model summarizes)."),
    _value("--summary-model", metavar="NAME", help="Model that writes --compaction llm summaries (default: --model)."),
    _value("--max-tool-rounds", metavar="N", type=int, help="Maximum tool rounds per run."),
    # The provider's endpoint and the mock's pace.
    _value("--mock-delay-ms", metavar="MS", type=int, help=f"Milliseconds between mock reply deltas (0-{MAX_MOCK_DELAY_MS})."),
    _value("--base-url", metavar="URL", help="Endpoint of an OpenAI-compatible server (overrides the preset's)."),
    _value("--api-key-env", metavar="NAME", help="Environment variable that holds the API key (overrides the preset's)."),
    # Observational memory.
    _value("--memory", metavar="observational", help="Observational memory: workers after each run, recall tool, om:* commands."),
    _value("--memory-model", metavar="NAME", help="Model for the memory workers (default: the session's model)."),
    # The host's own agent, and durable runs.
    _value("--agent", metavar="MODULE:FACTORY", help="Use the agent this factory returns (its tools, middleware, stores, provider)."),
    _switch("--durable", help="Checkpoint the run at every step so --resume can continue it (needs --session)."),
    _switch("--resume", help="Continue the session's unfinished durable run (with --session; no -p)."),
    # What the process shows besides its mode's output.
    _switch("--approve-all", help="Approve every tool call a durable run pauses on (else asked on a terminal)."),
    _switch("--deny-all", help="Deny every tool call a durable run pauses on (the model reads why)."),
    _switch("--no-markdown", help="Interactive mode: print answers as plain text (also when NO_COLOR is set)."),
    _switch("--otel", help="Write OpenTelemetry spans to stderr (needs prism-harness[otel])."),
    _switch("-v", "--verbose", help="Log what Prism does (requests and responses, redacted) to stderr."),
)  # fmt: skip


def _parser() -> _Parser:
    parser = _Parser(
        prog="prism",
        description=DESCRIPTION,
        epilog=EPILOG,
        allow_abbrev=False,
        add_help=False,
    )
    for names, options in _FLAGS:
        parser.add_argument(*names, **options)
    return parser


def _known_providers() -> tuple[str, ...]:
    from prism.cli.providers import known_provider_names

    return known_provider_names()


# The parsed flags build_options takes, by its parameter names (argparse's
# dest where it differs).
_OPTION_DESTS: dict[str, str] = {
    "resources": "resource",
    "extensions": "extension",
    "tools": "tool",
}
_OPTION_NAMES: tuple[str, ...] = (
    "mode",
    "prompt",
    "provider",
    "model",
    "session",
    "config",
    "resources",
    "extensions",
    "tools",
    "system",
    "context",
    "compact",
    "compaction",
    "summary_model",
    "max_tool_rounds",
    "mock_delay_ms",
    "base_url",
    "api_key_env",
    "memory",
    "memory_model",
    "otel",
    "agent",
    "durable",
    "resume",
    "verbose",
    "approve_all",
    "deny_all",
)


def _option_values(parsed: argparse.Namespace) -> dict[str, Any]:
    return {name: getattr(parsed, _OPTION_DESTS.get(name, name)) for name in _OPTION_NAMES}


def _interactive(parsed: argparse.Namespace) -> bool:
    """``prism`` with no prompt on a terminal opens an interactive session."""
    return (
        parsed.prompt is None
        and parsed.mode == "print"
        and not parsed.resume
        and sys.stdin.isatty()
        and sys.stdout.isatty()
    )


def run(args: Sequence[str]) -> int:
    """Parse ``args`` and run the selected mode; the process exit code."""
    parser = _parser()
    parsed = parser.parse_args(list(args))
    if parsed.help:
        sys.stdout.write(parser.format_help())
        return 0
    values = _option_values(parsed)
    interactive = _interactive(parsed)
    if interactive:
        values["prompt"] = "(interactive)"  # each typed line is a prompt
    options = build_options(**values, known_providers=_known_providers)
    if interactive:
        from prism.cli.interactive import run_interactive

        return run_interactive(options, markdown=not parsed.no_markdown)
    from prism.cli.modes import run_mode

    return run_mode(options)


__all__ = ["UsageProblem", "run"]
