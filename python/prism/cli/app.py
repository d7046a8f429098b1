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


def _parser() -> _Parser:
    parser = _Parser(
        prog="prism",
        description=DESCRIPTION,
        epilog=EPILOG,
        allow_abbrev=False,
        add_help=False,
    )
    add = parser.add_argument
    add("-h", "--help", action="store_true", help="Show this message and exit.")
    _add_run_flags(parser)
    _add_recorded_flags(parser)
    _add_instruction_flags(parser)
    _add_loop_flags(parser)
    _add_provider_flags(parser)
    _add_memory_flags(parser)
    _add_host_flags(parser)
    _add_output_flags(parser)
    return parser


def _add_run_flags(parser: argparse.ArgumentParser) -> None:
    """What one run is: prompt, mode, provider, model, session, config file."""
    add = parser.add_argument
    add("-p", "--prompt", metavar="TEXT", help="Prompt for print/json modes.")
    add("--mode", metavar="print|json|rpc", default="print", help="print, json or rpc.")
    add("--provider", metavar="NAME", help="mock (default), a preset or a configured provider.")
    add("--model", metavar="NAME", help="Model name.")
    add("--session", metavar="ID", help="Session id; persisted to the JSONL session file.")
    add("--config", metavar="PATH", help="JSON config file to read (only when given).")


def _add_recorded_flags(parser: argparse.ArgumentParser) -> None:
    """Flags the CLI records but does not load (docs/cli.md)."""
    add = parser.add_argument
    add("--resource", metavar="URI", action="append", help="Resource URI (recorded, not loaded).")
    add(
        "--extension",
        metavar="NAME",
        action="append",
        help="Extension name (recorded, not imported).",
    )
    add("--tool", metavar="NAME", action="append", help="Tool name (recorded, not enabled).")


def _add_instruction_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--system", metavar="TEXT", help="System instructions.")
    add("--context", metavar="TEXT", help="Context text added to each request.")


def _add_loop_flags(parser: argparse.ArgumentParser) -> None:
    """Compaction and the tool-round bound."""
    add = parser.add_argument
    add(
        "--compact",
        metavar="N",
        type=int,
        help="Auto-compact once the session has this many entries.",
    )
    add(
        "--compaction",
        metavar="default|llm",
        help="Compaction strategy: default (no model call) or llm (the model summarizes).",
    )
    add(
        "--summary-model",
        metavar="NAME",
        help="Model that writes --compaction llm summaries (default: --model).",
    )
    add("--max-tool-rounds", metavar="N", type=int, help="Maximum tool rounds per run.")


def _add_provider_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--mock-delay-ms",
        metavar="MS",
        type=int,
        help=f"Milliseconds between mock reply deltas (0-{MAX_MOCK_DELAY_MS}).",
    )
    add(
        "--base-url",
        metavar="URL",
        help="Endpoint of an OpenAI-compatible server (overrides the preset's).",
    )
    add(
        "--api-key-env",
        metavar="NAME",
        help="Environment variable that holds the API key (overrides the preset's).",
    )


def _add_memory_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--memory",
        metavar="observational",
        help="Observational memory: workers after each run, recall tool, om:* commands.",
    )
    add(
        "--memory-model",
        metavar="NAME",
        help="Model for the memory workers (default: the session's model).",
    )


def _add_host_flags(parser: argparse.ArgumentParser) -> None:
    """The host's own agent, and durable runs."""
    add = parser.add_argument
    add(
        "--agent",
        metavar="MODULE:FACTORY",
        help="Use the agent this factory returns (its tools, middleware, stores, provider).",
    )
    add(
        "--durable",
        action="store_true",
        help="Checkpoint the run at every step so --resume can continue it (needs --session).",
    )
    add(
        "--resume",
        action="store_true",
        help="Continue the session's unfinished durable run (with --session; no -p).",
    )


def _add_output_flags(parser: argparse.ArgumentParser) -> None:
    """What the process shows besides its mode's output."""
    add = parser.add_argument
    add(
        "--approve-all",
        action="store_true",
        help="Approve every tool call a durable run pauses on (else asked on a terminal).",
    )
    add(
        "--deny-all",
        action="store_true",
        help="Deny every tool call a durable run pauses on (the model reads why).",
    )
    add(
        "--no-markdown",
        action="store_true",
        help="Interactive mode: print answers as plain text (also when NO_COLOR is set).",
    )
    add(
        "--otel",
        action="store_true",
        help="Write OpenTelemetry spans to stderr (needs prism-harness[otel]).",
    )
    add(
        "-v",
        "--verbose",
        action="store_true",
        help="Log what Prism does (requests and responses, redacted) to stderr.",
    )


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
