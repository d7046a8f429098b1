"""print and json modes: one run of ``-p PROMPT``, then exit.

print writes only assistant text deltas to stdout; json writes one event
envelope per line. Either way a failed run (the stream's ``error`` event, or
an exception the runtime did not turn into one) prints one line on stderr
and exits 1.
"""

from __future__ import annotations

import sys
from typing import Any, cast

import anyio

from prism.cli.host import create_host, describe_exception
from prism.cli.io import LineWriter
from prism.cli.options import CliOptions
from prism.cli.rpc_protocol import event_envelope
from prism.contracts import ErrorInfo

RUN_FAILED_EXIT_CODE = 1


def stderr_line(message: str) -> None:
    sys.stderr.write(f"prism: error: {' '.join(message.split())}\n")
    sys.stderr.flush()


def assistant_text_delta(event: Any) -> str | None:
    """The text of an assistant text delta, else None (thinking is not printed)."""
    if event.get("type") != "message_delta":
        return None
    delta = event.get("delta")
    if not isinstance(delta, dict) or delta.get("type") != "text":
        return None
    text = delta.get("text")
    return text if isinstance(text, str) else None


async def _run_once(options: CliOptions, writer: LineWriter) -> int:
    host = create_host(options)
    await host.start()
    session = host.create_session()
    failure: ErrorInfo | None = None
    wrote_text = False

    def show(event: Any) -> None:
        nonlocal failure, wrote_text
        if options.mode == "json":
            writer.write_json(event_envelope(None, event))
        else:
            text = assistant_text_delta(event)
            if text:
                writer.write_text(text)
                wrote_text = True
        if event.get("type") == "error":
            failure = cast(ErrorInfo, event.get("error") or {"message": "run failed"})

    try:
        if options.resume:
            # The same output as a run; nothing to resume is not an error.
            unsubscribe = session.subscribe(show)
            try:
                await session.resume()
            finally:
                unsubscribe()
        else:
            assert options.prompt is not None
            # Durable per run (a host's --agent keeps its own default).
            stream = (
                session.stream(options.prompt, durable=True)
                if options.durable
                else session.stream(options.prompt)
            )
            async with stream as events:
                async for event in events:
                    show(event)
    except Exception as error:
        failure = describe_exception(error, host.agent.config.redactor)
    if options.mode == "print" and wrote_text and sys.stdout.isatty():
        writer.write_text("\n")  # only for a terminal: piped output stays exactly the deltas
    if failure is not None:
        stderr_line(str(failure.get("message") or "run failed"))
        return RUN_FAILED_EXIT_CODE
    await host.after_run(session)
    return 0


def run_mode(options: CliOptions) -> int:
    writer = LineWriter(sys.stdout.buffer)
    try:
        if options.mode == "rpc":
            from prism.cli.rpc import serve_rpc

            return anyio.run(serve_rpc, options, writer, sys.stdin.buffer)
        return anyio.run(_run_once, options, writer)
    except KeyboardInterrupt:
        stderr_line("interrupted")
        return 130
