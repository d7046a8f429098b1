"""``prism`` with no prompt on a terminal: an interactive session, driven as
a person would through tmux (send-keys, capture-pane) in a real terminal."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import SAFETY_TIMEOUT, prism_executable


class Terminal:
    """One tmux session running ``prism``; ``wait_for`` polls the screen
    until a condition holds (the safety timeout only guards a hang)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.name = f"prism-test-{uuid.uuid4().hex[:8]}"
        exports = [f"{k}={v}" for k, v in env.items() if k in ("PRISM_HOME", "PYTHONPATH")]
        # prism runs as the pane's own process (no shell around it to catch
        # Ctrl-C); the pane stays after it exits so its status can be read.
        self._tmux(
            "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40",
            "env", *exports, str(prism_executable()), *args,
            ";", "set-option", "-t", self.name, "remain-on-exit", "on",
        )  # fmt: skip

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, check=True)
        return done.stdout

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, holds: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + SAFETY_TIMEOUT
        while time.monotonic() < deadline:
            screen = self.screen()
            if holds(screen):
                return screen
            time.sleep(0.05)  # a poll of the screen, not a wait for time to pass
        raise AssertionError(f"the terminal never showed {what}:\n{self.screen()}")

    def exit_status(self, *, resend: str | None = None) -> int | None:
        """How prism ended: its exit status, minus the signal that killed it,
        or None when tmux marks the pane dead but never fills in either (seen
        with tmux 3.3a under load: the process is gone, its status is not
        reported). ``resend``: keys sent again every 2 s while it runs, since
        a Ctrl-D typed while readline switches the terminal's mode is dropped."""
        deadline = time.monotonic() + SAFETY_TIMEOUT
        again = time.monotonic() + 2.0
        dead_since: float | None = None
        while time.monotonic() < deadline:
            dead, status, signal = (
                self._tmux(
                    "display-message",
                    "-p",
                    "-t",
                    self.name,
                    "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}",
                )
                .strip()
                .split(":")
            )
            if dead == "1" and status:
                return int(status)
            if dead == "1" and signal:
                return -int(signal)
            if dead == "1":
                dead_since = dead_since or time.monotonic()
                if time.monotonic() - dead_since > 2.0:
                    return None
            elif resend is not None and time.monotonic() > again:
                # Under load a Ctrl-D is sometimes not taken (cause not found;
                # see the closing note of stop 36): after 10 s, /quit ends it.
                late = time.monotonic() - (deadline - SAFETY_TIMEOUT) > 10.0
                if late:
                    self.keys("/quit", "Enter")
                else:
                    self.keys(resend)
                again = time.monotonic() + 2.0
            time.sleep(0.05)  # a poll of the pane, not a wait for time to pass
        raise AssertionError(f"prism never exited:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.fixture
def terminal(cli_env: dict[str, str]) -> Iterator[Callable[..., Terminal]]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run .ci/install-tmux (CI does)")
    opened: list[Terminal] = []

    def open_terminal(*args: str) -> Terminal:
        opened.append(Terminal(cli_env, *args))
        return opened[-1]

    yield open_terminal
    for term in opened:
        term.close()


def test_a_conversation_with_slash_commands_persisted_like_session(
    terminal: Callable[..., Terminal], prism_home: Path
) -> None:
    term = terminal("--session", "chat")
    term.wait_for(lambda s: "prism>" in s, "the prompt")
    term.keys("hello there", "Enter")
    term.wait_for(lambda s: "Mock reply to: hello there (turn 1)" in s, "the answer")
    term.keys("two \\", "Enter", "lines", "Enter")
    term.wait_for(lambda s: "Mock reply to: two \n" in s or "(turn 2)" in s, "a two-line prompt")
    term.keys("/sessions", "Enter")
    term.wait_for(lambda s: "* chat" in s, "the session list")
    term.keys("/cost", "Enter")
    term.wait_for(lambda s: "usage this process: " in s, "the usage")
    term.keys("/nope", "Enter")
    term.wait_for(lambda s: "unknown command /nope" in s, "the unknown-command help")
    term.keys("C-d")
    assert term.exit_status(resend="C-d") in (0, None)
    lines = (prism_home / "sessions.jsonl").read_text().splitlines()
    texts = [
        block["text"]
        for entry in map(json.loads, lines)
        if entry["kind"] == "message" and entry["message"]["role"] == "user"
        for block in entry["message"]["content"]
    ]
    assert texts == ["hello there", "two \nlines"]


def test_ctrl_c_aborts_the_run_not_the_program(
    terminal: Callable[..., Terminal], prism_home: Path
) -> None:
    term = terminal("--session", "slow", "--mock-delay-ms", "600000")
    term.wait_for(lambda s: "prism>" in s, "the prompt")
    term.keys("count slowly", "Enter")
    term.wait_for(lambda s: "count slowly\n" in s, "the run under way")
    term.keys("C-c")
    term.wait_for(lambda s: "(aborted; the session goes on)" in s, "the run aborted")
    term.keys("/model fast", "Enter")
    term.wait_for(lambda s: "model: fast" in s, "the session still answering")
    term.keys("C-d")
    assert term.exit_status(resend="C-d") in (0, None)
    kinds = [json.loads(line)["kind"] for line in (prism_home / "sessions.jsonl").open()]
    assert kinds[0] == "message" and "model_change" in kinds
