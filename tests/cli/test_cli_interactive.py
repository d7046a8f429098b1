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
        exports = [
            f"{k}={v}"
            for k, v in env.items()
            if k in ("PRISM_HOME", "PYTHONPATH") or k.startswith("REFUND_APP_")
        ]
        # prism runs as the pane's own process (no shell around it to catch
        # Ctrl-C); the pane stays after it exits so its status can be read.
        # NO_COLOR from the tmux server's environment would turn markdown off.
        self._tmux(
            "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40",
            "env", "-u", "NO_COLOR", *exports, str(prism_executable()), *args,
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

    def exit_status(self) -> int | None:
        """How prism ended: its exit status, minus the signal that killed it,
        or None when tmux marks the pane dead but never fills in either (seen
        with tmux 3.3a under load: the process is gone, its status is not
        reported)."""
        deadline = time.monotonic() + SAFETY_TIMEOUT
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
    assert term.exit_status() in (0, None)
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
    assert term.exit_status() in (0, None)
    kinds = [json.loads(line)["kind"] for line in (prism_home / "sessions.jsonl").open()]
    assert kinds[0] == "message" and "model_change" in kinds


def test_ctrl_d_typed_during_a_run_exits_after_it(terminal: Callable[..., Terminal]) -> None:
    # A Ctrl-D that reaches the tty while no prompt reads (here: mid-answer)
    # used to become a NUL byte for readline and be lost; it now waits for
    # the next prompt like any key typed ahead. Plain text: the raw ** stay.
    term = terminal("--session", "ahead", "--mock-delay-ms", "150", "--no-markdown")
    term.wait_for(lambda s: "prism>" in s, "the prompt")
    term.keys("say **this**", "Enter")
    term.wait_for(lambda s: "Mock reply" in s, "the answer under way")
    term.keys("C-d")
    assert term.exit_status() in (0, None)
    assert "Mock reply to: say **this** (turn 1)" in term.screen()


REFUND_APP = """
import os
import re
import sys

sys.path.insert(0, os.environ["REFUND_APP_TESTS"])
from approval_scenario import SECRET, make_agent
from pathlib import Path

from prism.providers import (
    create_mock_provider, provider_done, provider_text_delta, provider_tool_call,
)
from prism.stores.sqlite import SqliteSessionStore

NOTES = (
    "# Release notes\\n\\nThe **bold** claim, with `inline` code.\\n\\n"
    "```python\\nprint('highlighted')\\n```\\n\\n- first item\\n- second item\\n\\n"
    "The key is " + SECRET + " here.\\n"
)


def deltas(text):
    # One delta per word, and the secret split across two of them: each
    # event alone holds no secret, so only the joined text can be redacted.
    words = re.findall(r"\\s*\\S+\\s*", text)
    out = []
    for word in words:
        if SECRET in word:
            cut = word.index(SECRET) + 9
            out += [word[:cut], word[cut:]]
        else:
            out.append(word)
    return [provider_text_delta(d) for d in out]


def script(request):
    messages = request["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    prompt = "".join(b.get("text", "") for b in messages[last]["content"])
    if prompt == "notes":
        return [*deltas(NOTES), provider_done()]
    results = [b for m in messages[last + 1:] if m["role"] == "tool" for b in m["content"]]
    if not results:
        arguments = {"order": prompt, "cents": 1250, "note": SECRET}
        return [provider_tool_call(f"call_{last}", "refund", arguments), provider_done()]
    outcome = "not refunded" if results[-1].get("isError") else "refunded"
    return [provider_text_delta(f"order {prompt}: {outcome}"), provider_done()]


def build():
    store = SqliteSessionStore(os.environ["REFUND_APP_DB"])
    counts = Path(os.environ["REFUND_APP_COUNTS"])
    return make_agent(
        store, counts, provider=create_mock_provider(script), secrets=(SECRET,)
    )
"""


def test_markdown_and_inline_approvals_in_one_session(
    terminal: Callable[..., Terminal], cli_env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "refundapp.py").write_text(REFUND_APP)
    counts = tmp_path / "counts"
    cli_env["REFUND_APP_TESTS"] = str(Path(__file__).resolve().parent.parent / "approvals")
    cli_env["REFUND_APP_DB"] = str(tmp_path / "host.sqlite")
    cli_env["REFUND_APP_COUNTS"] = str(counts)
    cli_env["PYTHONPATH"] = f"{folder}:{cli_env.get('PYTHONPATH', '')}"

    def refunds() -> int:
        lines = counts.read_text().splitlines() if counts.exists() else []
        return sum(1 for line in lines if line.startswith("refund "))

    term = terminal("--agent", "refundapp:build", "--session", "desk")
    term.wait_for(lambda s: "prism>" in s, "the prompt")
    term.keys("notes", "Enter")
    screen = term.wait_for(lambda s: "second item" in s and " here." in s, "the rendered notes")
    assert "Release notes" in screen and "# Release" not in screen
    assert "The bold claim, with inline code." in screen and "**" not in screen
    assert "print('highlighted')" in screen and "```" not in screen
    assert "• first item" in screen
    assert "The key is [REDACTED] here." in screen and "sk-live" not in screen

    term.keys("A-1", "Enter")
    screen = term.wait_for(lambda s: "approve? [y/N]" in s, "the approval question")
    assert 'refund {"order":"A-1","cents":1250,"note":"[REDACTED]"}' in screen
    assert "? refund: waiting for approval" in screen
    assert refunds() == 0
    term.keys("y", "Enter")
    term.wait_for(lambda s: "order A-1: refunded" in s, "the approved outcome")
    assert refunds() == 1

    term.keys("A-2", "Enter")
    term.wait_for(lambda s: s.count("approve? [y/N]") == 2, "the second question")
    term.keys("n", "Enter")
    term.wait_for(lambda s: "order A-2: not refunded" in s, "the denied outcome")
    assert "✗ refund: Tool 'refund' was not approved: denied at the" in term.screen()

    term.keys("A-3", "Enter")
    term.wait_for(lambda s: s.count("approve? [y/N]") == 3, "the third question")
    term.keys("C-c")
    term.wait_for(lambda s: "(denied; the run is aborted; the session goes on)" in s, "the abort")
    term.keys("/cost", "Enter")
    term.wait_for(lambda s: "usage this process" in s, "the session going on")
    assert refunds() == 1
    term.keys("C-d")
    assert term.exit_status() in (0, None)
