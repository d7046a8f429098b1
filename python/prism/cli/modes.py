"""print and json modes: one run of ``-p PROMPT``, then exit.

print writes only assistant text deltas to stdout; json writes one event
envelope per line. Either way a failed run (the stream's ``error`` event, or
an exception the runtime did not turn into one) prints one line on stderr
and exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import anyio

from prism.cli.host import CliHost, create_host, describe_exception
from prism.cli.io import LineWriter
from prism.cli.options import CliOptions
from prism.cli.rpc_protocol import event_envelope
from prism.contracts import ErrorInfo

if TYPE_CHECKING:
    from prism.runtime import AgentSession, RunResult

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

    def fresh_line() -> None:
        # Before a question or report on the terminal: end the printed answer.
        nonlocal wrote_text
        if options.mode == "print" and wrote_text and sys.stdout.isatty():
            writer.write_text("\n")
        wrote_text = False

    paused_code = 0
    try:
        if options.resume:
            # The same output as a run; nothing to resume is not an error.
            unsubscribe = session.subscribe(show)
            try:
                result = await session.resume()
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
            result = stream.result
        if failure is None and result is not None and result.paused:
            paused_code = await _answer_pause(
                options, host, session, result, writer, (show, fresh_line)
            )
    except Exception as error:
        failure = describe_exception(error, host.agent.config.redactor)
    if options.mode == "print" and wrote_text and sys.stdout.isatty():
        writer.write_text("\n")  # only for a terminal: piped output stays exactly the deltas
    if failure is not None:
        stderr_line(str(failure.get("message") or "run failed"))
        return RUN_FAILED_EXIT_CODE
    if paused_code:
        return paused_code
    await host.after_run(session)
    return 0


async def _answer_pause(
    options: CliOptions,
    host: CliHost,
    session: AgentSession,
    result: RunResult,
    writer: LineWriter,
    printers: tuple[Callable[[Any], None], Callable[[], None]],
) -> int:
    """A durable run paused for approval: answered here, or reported
    (prism.cli.approvals)."""
    from prism.cli.approvals import PauseContext, answer_paused_run

    show, fresh_line = printers
    context = PauseContext(
        options=options,
        redactor=host.agent.config.redactor,
        show=show,
        writer=writer,
        persisted=options.session is not None or host.agent.config.store is not None,
        fresh_line=fresh_line,
    )
    return await answer_paused_run(session, result, context)


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
