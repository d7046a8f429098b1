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
from typing import NoReturn

from prism.cli.options import MAX_MOCK_DELAY_MS, UsageProblem, build_options

DESCRIPTION = (
    "Run a Prism agent session from the terminal. print mode writes the "
    "assistant's text, json mode one event envelope per line, rpc mode "
    "speaks LF-delimited JSON on stdin/stdout. See docs/cli.md."
)
EPILOG = (
    "Also: prism init DIR [--template NAME] (a starter project), "
    "prism providers add|list (configured providers), "
    "prism bench attention [--runs N] [--seed N] [--out DIR] (source checkout)."
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
    add("-p", "--prompt", metavar="TEXT", help="Prompt for print/json modes.")
    add("--mode", metavar="print|json|rpc", default="print", help="print, json or rpc.")
    add("--provider", metavar="NAME", help="mock (default), a preset or a configured provider.")
    add("--model", metavar="NAME", help="Model name.")
    add("--session", metavar="ID", help="Session id; persisted to the JSONL session file.")
    add("--config", metavar="PATH", help="JSON config file to read (only when given).")
    add("--resource", metavar="URI", action="append", help="Resource URI (recorded, not loaded).")
    add(
        "--extension",
        metavar="NAME",
        action="append",
        help="Extension name (recorded, not imported).",
    )
    add("--tool", metavar="NAME", action="append", help="Tool name (recorded, not enabled).")
    add("--system", metavar="TEXT", help="System instructions.")
    add("--context", metavar="TEXT", help="Context text added to each request.")
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
        "--otel",
        action="store_true",
        help="Write OpenTelemetry spans to stderr (needs prism-harness[otel]).",
    )
    return parser


def _known_providers() -> tuple[str, ...]:
    from prism.cli.providers import known_provider_names

    return known_provider_names()


def run(args: Sequence[str]) -> int:
    """Parse ``args`` and run the selected mode; the process exit code."""
    parser = _parser()
    parsed = parser.parse_args(list(args))
    if parsed.help:
        sys.stdout.write(parser.format_help())
        return 0
    options = build_options(
        mode=parsed.mode,
        prompt=parsed.prompt,
        provider=parsed.provider,
        model=parsed.model,
        session=parsed.session,
        config=parsed.config,
        resources=parsed.resource,
        extensions=parsed.extension,
        tools=parsed.tool,
        system=parsed.system,
        context=parsed.context,
        compact=parsed.compact,
        compaction=parsed.compaction,
        summary_model=parsed.summary_model,
        max_tool_rounds=parsed.max_tool_rounds,
        mock_delay_ms=parsed.mock_delay_ms,
        known_providers=_known_providers,
        base_url=parsed.base_url,
        api_key_env=parsed.api_key_env,
        memory=parsed.memory,
        memory_model=parsed.memory_model,
        otel=parsed.otel,
        agent=parsed.agent,
        durable=parsed.durable,
        resume=parsed.resume,
        approve_all=parsed.approve_all,
        deny_all=parsed.deny_all,
    )
    from prism.cli.modes import run_mode

    return run_mode(options)


__all__ = ["UsageProblem", "run"]
