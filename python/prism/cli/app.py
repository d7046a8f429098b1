"""The typer app behind ``prism``: flags in, a validated CliOptions out,
then one mode runs. Rich help/pretty tracebacks are off so every usage error
is one plain stderr line."""

from __future__ import annotations

from typing import Annotated

import typer

from prism.cli.options import MAX_MOCK_DELAY_MS, UsageProblem, build_options
from prism.cli.providers import known_provider_names

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["--help", "-h"]},
)


@app.command(
    help=(
        "Run a Prism agent session from the terminal. print mode writes the "
        "assistant's text, json mode one event envelope per line, rpc mode "
        "speaks LF-delimited JSON on stdin/stdout. See docs/cli.md."
    ),
    epilog="Also: prism bench attention [--runs N] [--seed N] [--out DIR] (source checkout).",
)
def run(
    prompt: Annotated[
        str | None,
        typer.Option("-p", "--prompt", metavar="TEXT", help="Prompt for print/json modes."),
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", metavar="print|json|rpc", help="print, json or rpc.")
    ] = "print",
    provider: Annotated[
        str | None,
        typer.Option("--provider", metavar="NAME", help="mock (default) or a provider preset."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="NAME", help="Model name.")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session", metavar="ID", help="Session id; persisted to the JSONL session file."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config", metavar="PATH", help="JSON config file to read (only when given)."
        ),
    ] = None,
    resource: Annotated[
        list[str] | None,
        typer.Option("--resource", metavar="URI", help="Resource URI (recorded, not loaded)."),
    ] = None,
    extension: Annotated[
        list[str] | None,
        typer.Option(
            "--extension", metavar="NAME", help="Extension name (recorded, not imported)."
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option("--tool", metavar="NAME", help="Tool name (recorded, not enabled)."),
    ] = None,
    system: Annotated[
        str | None, typer.Option("--system", metavar="TEXT", help="System instructions.")
    ] = None,
    context: Annotated[
        str | None,
        typer.Option("--context", metavar="TEXT", help="Context text added to each request."),
    ] = None,
    compact: Annotated[
        int | None,
        typer.Option(
            "--compact", metavar="N", help="Auto-compact once the session has this many entries."
        ),
    ] = None,
    max_tool_rounds: Annotated[
        int | None,
        typer.Option("--max-tool-rounds", metavar="N", help="Maximum tool rounds per run."),
    ] = None,
    mock_delay_ms: Annotated[
        int | None,
        typer.Option(
            "--mock-delay-ms",
            metavar="MS",
            help=f"Milliseconds between mock reply deltas (0-{MAX_MOCK_DELAY_MS}).",
        ),
    ] = None,
) -> None:
    options = build_options(
        mode=mode,
        prompt=prompt,
        provider=provider,
        model=model,
        session=session,
        config=config,
        resources=resource,
        extensions=extension,
        tools=tool,
        system=system,
        context=context,
        compact=compact,
        max_tool_rounds=max_tool_rounds,
        mock_delay_ms=mock_delay_ms,
        known_providers=known_provider_names(),
    )
    from prism.cli.modes import run_mode

    raise typer.Exit(run_mode(options))


__all__ = ["UsageProblem", "app"]
