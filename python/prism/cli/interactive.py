"""``prism`` with no prompt on a terminal: an interactive session.

Each line typed is one run on the session (persisted to the CLI's session
file like ``--session``); the answer streams as it arrives, rendered as
markdown (prism.cli.interactive_output), tool calls and results show as one
folded line each, a tool call that needs approval is asked inline, and
slash commands act on the session. Ctrl-C during a run aborts that run
(the session stays usable); Ctrl-C at the prompt clears the line; Ctrl-D
(or ``/quit``) exits. A line ending in ``\\`` continues on the next. Line
editing and history come from ``readline`` when the platform has it.

Each run gets its own ``anyio.run``: the prompt reads on the main thread,
where SIGINT lands, so Ctrl-C reaches the run as a cancellation. Approvals
are asked on the main thread too, between runs, so an interrupted question
leaves no reader behind on stdin.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

import anyio

from prism.approvals import ApprovalDecision
from prism.cli.approvals import (
    APPROVE_PROMPT,
    APPROVED_AT_TERMINAL,
    DENIED_AT_TERMINAL,
    approval_question,
    approves,
    flag_decisions,
)
from prism.cli.host import CliHost, create_host
from prism.cli.interactive_output import RunOutput
from prism.cli.modes import assistant_text_delta
from prism.cli.options import CliOptions
from prism.runtime import AgentSession, RunResult

PROMPT = "prism> "
CONTINUATION = "  ...> "
HELP = (
    "commands: /model NAME  /compact  /fork  /sessions  /resume ID  /cost  /inspect"
    "  /help  /quit   (Ctrl-C aborts a run, Ctrl-D exits)"
)
_FOLD = 60  # characters of a tool call or result shown on its line
INTERRUPTED = ApprovalDecision.deny("denied: the approval was interrupted at the terminal")


def run_interactive(options: CliOptions, *, markdown: bool = True) -> int:
    """``markdown``: False for ``--no-markdown``; NO_COLOR, a stdout that is
    not a terminal, or no ``rich`` installed also give plain text."""
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    session_id = options.session or f"chat-{uuid.uuid4().hex[:8]}"
    host = create_host(replace(options, session=session_id, prompt=None))
    anyio.run(host.start)
    with _Keyboard() as keyboard:
        shell = _Shell(host, host.create_session(session_id), keyboard, _console(markdown))
        _say(f"session {session_id} ({shell.session.current_model['model']}); /help for commands")
        while True:
            try:
                line = _read_input(keyboard)
            except KeyboardInterrupt:
                _say("")
                continue
            except EOFError:
                _say("")
                return 0
            if not line.strip():
                continue
            if line.strip() in ("/quit", "/exit"):
                return 0
            shell.handle(line)


def _console(markdown: bool) -> Any:
    """A rich console for markdown, or None for plain text."""
    if not markdown or os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:  # the `cli` extra is not installed
        return None
    return Console(highlight=False)


class _Keyboard:
    """Keeps the terminal out of canonical mode for the whole session.

    readline switches the terminal to non-canonical mode while it reads and
    back when the line is done. A Ctrl-D typed while the terminal is
    canonical (during a run, or in the gap before the next prompt) is taken
    by the tty as an end-of-file marker and handed to the next
    non-canonical read as a NUL byte, which readline binds to set-mark: the
    Ctrl-D was lost. Here the terminal stays non-canonical, so a key typed
    at any time reaches the next prompt as typed; echo is off between
    prompts (what is typed during a run shows at the next prompt) and on
    while readline reads, because readline echoes only when it was on."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._saved: list[Any] = []

    def __enter__(self) -> _Keyboard:
        if "readline" not in sys.modules or not sys.stdin.isatty():
            return self
        try:
            import termios
        except ImportError:
            return self
        self._fd = sys.stdin.fileno()
        self._saved = termios.tcgetattr(self._fd)
        self._set(echo=False)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)

    def _set(self, *, echo: bool) -> None:
        if self._fd is None:
            return
        import termios

        attrs = [*self._saved[:6], list(self._saved[6])]
        attrs[3] &= ~(termios.ICANON | termios.ECHO)
        if echo:
            attrs[3] |= self._saved[3] & termios.ECHO
        attrs[6][termios.VMIN] = 1
        attrs[6][termios.VTIME] = 0
        termios.tcsetattr(self._fd, termios.TCSANOW, attrs)

    def read(self, prompt: str) -> str:
        self._set(echo=True)
        try:
            return input(prompt)
        finally:
            self._set(echo=False)


def _read_input(keyboard: _Keyboard) -> str:
    lines = [keyboard.read(PROMPT)]
    while lines[-1].endswith("\\"):
        lines[-1] = lines[-1][:-1]
        lines.append(keyboard.read(CONTINUATION))
    return "\n".join(lines)


def _forget_answer() -> None:
    """An approval answer is not a prompt: keep it out of the history."""
    readline = sys.modules.get("readline")
    if readline is not None and readline.get_current_history_length() > 0:
        readline.remove_history_item(readline.get_current_history_length() - 1)


def _result_line(result: Mapping[str, Any]) -> str:
    """``✓ name: value…``; an error reads as its message, and a call that
    waits for approval as ``? name: waiting for approval`` (asked below)."""
    value = result.get("value")
    if not result.get("isError"):
        return f"  ✓ {result['name']}: {_fold(value)}"
    if isinstance(value, dict) and value.get("code") == "approval_required":
        return f"  ? {result['name']}: waiting for approval"
    if isinstance(value, dict) and "message" in value:
        value = value["message"]
    return f"  ✗ {result['name']}: {_fold(value)}"


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _fold(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _FOLD else text[: _FOLD - 1] + "…"


class _Shell:
    def __init__(
        self, host: CliHost, session: AgentSession, keyboard: _Keyboard, console: Any
    ) -> None:
        self.host = host
        self.session = session
        self.keyboard = keyboard
        self.console = console  # rich Console, or None for plain text
        self.usage: dict[str, int] = {}

    def handle(self, line: str) -> None:
        if line.startswith("/"):
            name, _, arg = line[1:].strip().partition(" ")
            command = self._commands().get(name)
            if command is None:
                _say(f"unknown command /{name}; {HELP}")
                return
            self._guarded(lambda: command(arg.strip()))
            return
        result = self._guarded(lambda: self._run(line))
        while isinstance(result, RunResult) and result.paused:
            result = self._answer(result.pending_approvals)

    def _guarded(self, action: Callable[[], Any]) -> Any:
        """Run ``action`` in its own event loop; None when it was aborted or failed."""
        try:
            return anyio.run(action)
        except KeyboardInterrupt:
            _say("\n(aborted; the session goes on)")
        except Exception as error:
            _say(f"error: {' '.join(str(error).split())}")
        return None

    def _commands(self) -> dict[str, Callable[[str], Any]]:
        return {
            "help": self._help,
            "model": self._model,
            "compact": self._compact,
            "fork": self._fork,
            "sessions": self._sessions,
            "resume": self._resume,
            "cost": self._cost,
            "inspect": self._inspect,
        }

    def _output(self) -> RunOutput:
        return RunOutput(self.console)

    async def _run(self, text: str) -> RunResult | None:
        output = self._output()
        stream = (
            self.session.stream(text, durable=True)
            if self.host.options.durable
            else self.session.stream(text)
        )
        try:
            async with stream as events:
                async for event in events:
                    self._show(event, output)
        finally:
            output.end_text()
        await self.host.after_run(self.session)
        return stream.result

    def _answer(self, pending: Sequence[Mapping[str, Any]]) -> RunResult | None:
        """Decide a paused run's approvals (the flags, else one question at
        a time) and resume it; None when that run is over."""
        decisions = flag_decisions(pending, self.host.options)
        interrupted = False
        if decisions is None:
            decisions, interrupted = self._ask(pending)
        result = self._guarded(lambda: self._resume_run(decisions, interrupted))
        if interrupted:
            _say("(denied; the run is aborted; the session goes on)")
        return result if isinstance(result, RunResult) else None

    def _ask(
        self, pending: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, ApprovalDecision], bool]:
        """Each approval in turn: ``y`` approves, anything else denies.
        Ctrl-C or Ctrl-D denies every one of them, and the run is aborted
        (True)."""
        redactor = self.host.agent.config.redactor
        decisions: dict[str, ApprovalDecision] = {}
        for number, approval in enumerate(pending, 1):
            sys.stdout.write(approval_question(approval, f"{number} of {len(pending)}", redactor))
            try:
                answer = self.keyboard.read(APPROVE_PROMPT)
            except (KeyboardInterrupt, EOFError):
                _say("")
                return {a["id"]: INTERRUPTED for a in pending}, True
            if answer.strip():
                _forget_answer()
            decisions[approval["id"]] = (
                APPROVED_AT_TERMINAL if approves(answer) else DENIED_AT_TERMINAL
            )
        return decisions, False

    async def _resume_run(
        self, decisions: dict[str, ApprovalDecision], abort: bool
    ) -> RunResult | None:
        """Resume with ``decisions``; when ``abort``, the run is aborted as
        soon as they are applied (the denials stored, nothing else run)."""
        output = self._output()
        undecided = set(decisions)
        failed = False

        def show(event: Any) -> None:
            nonlocal failed
            if event.get("type") == "error":
                failed = True
                if abort:
                    return  # the abort is said once, by _answer
            self._show(event, output)
            if abort and event.get("type") == "approval_decided":
                undecided.discard(event.get("approvalId"))
                if not undecided:
                    self.session.abort("the approval was interrupted at the terminal")

        unsubscribe = self.session.subscribe(show)
        try:
            result = await self.session.resume(decisions)
        except Exception:
            if not failed:
                raise
            return None  # shown as the run's error event (or, aborted, by _answer)
        finally:
            unsubscribe()
            output.end_text()
        await self.host.after_run(self.session)
        return result

    def _show(self, event: Any, output: RunOutput) -> None:
        kind = event.get("type")
        text = assistant_text_delta(event)
        if text:
            output.text(text)
        elif kind == "message_finished":
            output.end_text()
        elif kind == "tool_call":
            call = event["toolCall"]
            output.line(f"  ▸ {call['name']}({_fold(call.get('arguments', {}))})")
        elif kind == "tool_result":
            output.line(_result_line(event["result"]))
        elif kind == "run_finished":
            for key, value in (event.get("usage") or {}).items():
                if isinstance(value, int):
                    self.usage[key] = self.usage.get(key, 0) + value
        elif kind == "error":
            output.line(f"error: {' '.join(str(event['error'].get('message')).split())}")

    async def _help(self, _: str) -> None:
        _say(HELP)

    async def _model(self, name: str) -> None:
        if not name:
            _say(f"model: {self.session.current_model['model']}")
            return
        model = {**self.session.current_model, "model": name}
        await self.session.set_model(model)  # type: ignore[arg-type]
        _say(f"model: {name}")

    async def _compact(self, _: str) -> None:
        entry = await self.session.compact()
        _say(f"compacted ({len(str(entry.get('summary', '')))} characters of summary)")

    async def _fork(self, _: str) -> None:
        self.session = await self.session.fork()
        _say(f"forked: now in session {self.session.id}")

    async def _sessions(self, _: str) -> None:
        for session_id in await self.session.store.list_sessions():
            _say(("* " if session_id == self.session.id else "  ") + session_id)

    async def _resume(self, session_id: str) -> None:
        if not session_id:
            _say("usage: /resume ID (see /sessions)")
            return
        self.session = await self.host.open_session(session_id)
        _say(f"now in session {session_id}")

    async def _cost(self, _: str) -> None:
        parts = [f"{key} {value}" for key, value in sorted(self.usage.items())]
        _say("usage this process: " + (", ".join(parts) if parts else "none yet"))

    async def _inspect(self, _: str) -> None:
        _say(f"prism inspect --session {self.session.id}  (a read-only view in the browser)")
