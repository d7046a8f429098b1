"""``prism`` with no prompt on a terminal: an interactive session.

Each line typed is one run on the session (persisted to the CLI's session
file like ``--session``); the answer streams as it arrives, tool calls and
results show as one folded line each, and slash commands act on the
session. Ctrl-C during a run aborts that run (the session stays usable);
Ctrl-C at the prompt clears the line; Ctrl-D (or ``/quit``) exits. A line
ending in ``\\`` continues on the next. Line editing and history come from
``readline`` when the platform has it.

Each run gets its own ``anyio.run``: the prompt reads on the main thread,
where SIGINT lands, so Ctrl-C reaches the run as a cancellation.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio

from prism.cli.host import CliHost, create_host
from prism.cli.modes import assistant_text_delta
from prism.cli.options import CliOptions
from prism.runtime import AgentSession

PROMPT = "prism> "
CONTINUATION = "  ...> "
HELP = (
    "commands: /model NAME  /compact  /fork  /sessions  /resume ID  /cost  /inspect"
    "  /help  /quit   (Ctrl-C aborts a run, Ctrl-D exits)"
)
_FOLD = 60  # characters of a tool call or result shown on its line


def run_interactive(options: CliOptions) -> int:
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    session_id = options.session or f"chat-{uuid.uuid4().hex[:8]}"
    host = create_host(replace(options, session=session_id, prompt=None))
    anyio.run(host.start)
    shell = _Shell(host, host.create_session(session_id))
    _say(f"session {session_id} ({shell.session.current_model['model']}); /help for commands")
    while True:
        try:
            line = _read_input()
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


def _read_input() -> str:
    lines = [input(PROMPT)]
    while lines[-1].endswith("\\"):
        lines[-1] = lines[-1][:-1]
        lines.append(input(CONTINUATION))
    return "\n".join(lines)


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _fold(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _FOLD else text[: _FOLD - 1] + "…"


class _Shell:
    def __init__(self, host: CliHost, session: AgentSession) -> None:
        self.host = host
        self.session = session
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
        self._guarded(lambda: self._run(line))

    def _guarded(self, action: Callable[[], Any]) -> None:
        try:
            anyio.run(action)
        except KeyboardInterrupt:
            _say("\n(aborted; the session goes on)")
        except Exception as error:
            _say(f"error: {' '.join(str(error).split())}")

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

    async def _run(self, text: str) -> None:
        wrote = False
        async with self.session.stream(text) as events:
            async for event in events:
                wrote = self._show(event) or wrote
        if wrote:
            _say("")
        await self.host.after_run(self.session)

    def _show(self, event: Any) -> bool:
        """Print one event; True when it wrote answer text."""
        kind = event.get("type")
        text = assistant_text_delta(event)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
            return True
        if kind == "tool_call":
            call = event["toolCall"]
            _say(f"\n  ▸ {call['name']}({_fold(call.get('arguments', {}))})")
        elif kind == "tool_result":
            result = event["result"]
            mark = "✗" if result.get("isError") else "✓"
            _say(f"  {mark} {result['name']}: {_fold(result.get('value'))}")
        elif kind == "run_finished":
            for key, value in (event.get("usage") or {}).items():
                if isinstance(value, int):
                    self.usage[key] = self.usage.get(key, 0) + value
        elif kind == "error":
            _say(f"\nerror: {' '.join(str(event['error'].get('message')).split())}")
        return False

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
