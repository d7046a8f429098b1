"""A run that pauses for approval in print and json modes (docs/cli.md).

A durable run ends paused when a tool call needs a human
(docs/approvals.md). The CLI then answers it in one of three ways:

- ``--approve-all`` / ``--deny-all``: every pending approval, at once;
- stdin is a terminal: it asks for each one (on stderr) and reads y/n;
- otherwise nobody can answer here: it says so plainly (stderr, and one
  ``approval_waiting`` line in ``--mode json``), names the command that
  continues the run, and exits with ``PAUSED_EXIT_CODE``. The pause is a
  durable checkpoint, so that command works from any later process.

The interactive session (prism.cli.interactive) asks inline with the same
question, prompt and flag handling, on its own main thread.

Each answer resumes the run (``session.resume(decisions=...)``) with its
events streamed like the run's own; a run that pauses again is answered
again.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from prism.approvals import ApprovalDecision
from prism.cli.io import LineWriter
from prism.cli.options import CliOptions
from prism.runtime import AgentSession, RunResult
from prism.security.redaction import SecretRedactor

__all__ = [
    "APPROVE_PROMPT",
    "PAUSED_EXIT_CODE",
    "PauseContext",
    "answer_paused_run",
    "approval_question",
    "approves",
    "flag_decisions",
    "waiting_line",
]

PAUSED_EXIT_CODE = 3
"""The run is paused, waiting for approval (its checkpoint holds it)."""

MAX_SHOWN_ARGUMENTS = 300
APPROVE_PROMPT = "approve? [y/N] "
APPROVED_AT_TERMINAL = ApprovalDecision.approve("approved at the terminal")
DENIED_AT_TERMINAL = ApprovalDecision.deny("denied at the terminal")
ReadLine = Callable[[], str]


@dataclass(frozen=True, slots=True)
class PauseContext:
    """What answering a pause needs from the mode that ran the prompt."""

    options: CliOptions
    redactor: SecretRedactor
    show: Callable[[Any], None]  # the mode's event printer
    writer: LineWriter
    persisted: bool  # another process can open the session (store or --session)
    fresh_line: Callable[[], None] = lambda: None  # end a printed answer before asking
    interactive: bool | None = None  # None: stdin is a terminal
    read_line: ReadLine | None = None  # None: sys.stdin.readline


async def answer_paused_run(session: AgentSession, result: RunResult, ctx: PauseContext) -> int:
    """Answer ``result``'s pending approvals until the run is no longer
    paused (exit code 0) or nobody here can answer (``PAUSED_EXIT_CODE``,
    after the waiting report)."""
    current: RunResult | None = result
    while current is not None and current.paused:
        decisions = await _decide(current.pending_approvals, ctx)
        if not decisions:
            _report_waiting(session, current, ctx)
            return PAUSED_EXIT_CODE
        unsubscribe = session.subscribe(ctx.show)
        try:
            current = await session.resume(decisions)
        finally:
            unsubscribe()
    return 0


async def _decide(
    pending: Sequence[Mapping[str, Any]], ctx: PauseContext
) -> dict[str, ApprovalDecision]:
    by_flag = flag_decisions(pending, ctx.options)
    if by_flag is not None:
        return by_flag
    interactive = ctx.interactive
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    if not interactive:
        return {}
    read = ctx.read_line or sys.stdin.readline
    ctx.fresh_line()
    decisions: dict[str, ApprovalDecision] = {}
    for number, approval in enumerate(pending, 1):
        answer = await _ask(approval, f"{number} of {len(pending)}", ctx.redactor, read)
        if answer is None:  # end of input: the rest stays pending
            break
        decisions[approval["id"]] = answer
    return decisions


async def _ask(
    approval: Mapping[str, Any], position: str, redactor: SecretRedactor, read: ReadLine
) -> ApprovalDecision | None:
    _err(approval_question(approval, position, redactor))
    while True:
        _err(APPROVE_PROMPT)
        line = await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
        if not line:
            _err("\n")
            return None
        answer = line.strip().lower()
        if answer in ("y", "yes"):
            return APPROVED_AT_TERMINAL
        if answer in ("", "n", "no"):
            return DENIED_AT_TERMINAL
        _err("please answer y or n\n")


def flag_decisions(
    pending: Sequence[Mapping[str, Any]], options: CliOptions
) -> dict[str, ApprovalDecision] | None:
    """``--approve-all`` / ``--deny-all``: a decision for every pending
    approval; None when neither flag was given (someone must be asked)."""
    if options.approvals == "approve":
        return {a["id"]: ApprovalDecision.approve("approved by --approve-all") for a in pending}
    if options.approvals == "deny":
        return {a["id"]: ApprovalDecision.deny("denied by --deny-all") for a in pending}
    return None


def approval_question(approval: Mapping[str, Any], position: str, redactor: SecretRedactor) -> str:
    """What a person is shown before ``APPROVE_PROMPT`` (print mode on
    stderr, the interactive session inline): the tool, its redacted
    arguments, why it asks, and the approval id."""
    return (
        f"prism: approval needed ({position}): {describe_call(approval, redactor)}\n"
        f"  why: {redactor.redact_text(str(approval.get('reason', '')))}\n"
        f"  id: {approval['id']}\n"
    )


def approves(answer: str) -> bool:
    """A typed answer that approves (``y``/``yes``, any case)."""
    return answer.strip().lower() in ("y", "yes")


def describe_call(approval: Mapping[str, Any], redactor: SecretRedactor) -> str:
    """``tool {arguments}``, redacted and clipped to one readable line."""
    arguments = json.dumps(
        redactor.redact_value(approval.get("arguments") or {}),
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    if len(arguments) > MAX_SHOWN_ARGUMENTS:
        arguments = arguments[: MAX_SHOWN_ARGUMENTS - 3] + "..."
    return f"{approval.get('tool')} {arguments}"


def continue_argv(options: CliOptions, session_id: str, flag: str) -> list[str]:
    """The command that answers this session's pause from a later process."""
    argv = ["prism"]
    if options.agent is not None:
        argv += ["--agent", options.agent]
    argv += ["--session", session_id, "--resume"]
    if options.mode == "json":
        argv += ["--mode", "json"]
    return [*argv, flag]


def waiting_line(
    session_id: str, result: RunResult, ctx: PauseContext, redactor: SecretRedactor
) -> dict[str, Any]:
    """``--mode json``'s last line for a paused run: what it waits on and
    how to continue (``continue`` is None when nothing outside this process
    can reach the session)."""
    line: dict[str, Any] = {
        "type": "approval_waiting",
        "sessionId": session_id,
        "runId": result.run_id,
        "pendingApprovals": redactor.redact_value([dict(a) for a in result.pending_approvals]),
        "message": _waiting_message(session_id, result, ctx),
    }
    line["continue"] = (
        {
            "approve": continue_argv(ctx.options, session_id, "--approve-all"),
            "deny": continue_argv(ctx.options, session_id, "--deny-all"),
        }
        if ctx.persisted
        else None
    )
    return line


def _waiting_message(session_id: str, result: RunResult, ctx: PauseContext) -> str:
    count = len(result.pending_approvals)
    head = (
        f"run {result.run_id} of session {session_id!r} is paused, waiting for approval of"
        f" {count} tool call{'s' if count != 1 else ''}; stdin is not a terminal, so nothing"
        " was asked."
    )
    if not ctx.persisted:
        return (
            f"{head} The session is not persisted (no --session and the agent has no store),"
            " so the paused run ends with this process: rerun with --approve-all or"
            " --deny-all, or on a terminal."
        )
    approve = shlex.join(continue_argv(ctx.options, session_id, "--approve-all"))
    return (
        f"{head} Continue with: {approve} (or --deny-all), or on a terminal without either"
        " flag to answer each; an rpc client sends approve/deny."
    )


def _report_waiting(session: AgentSession, result: RunResult, ctx: PauseContext) -> None:
    redactor = ctx.redactor
    if ctx.options.mode == "json":
        ctx.writer.write_json(waiting_line(session.id, result, ctx, redactor))
    ctx.fresh_line()
    lines = [f"prism: {_waiting_message(session.id, result, ctx)}"]
    lines += [
        f"  {a['id']}: {describe_call(a, redactor)} ({redactor.redact_text(str(a.get('reason', '')))})"
        for a in result.pending_approvals
    ]
    _err("\n".join(lines) + "\n")


def _err(text: str) -> None:
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
