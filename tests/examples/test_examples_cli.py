"""The CLI examples run as documented: examples/cli_rpc_demo.py and the
shell session in docs/cli.md, against the installed ``prism`` script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from example_runner import ROOT, run_example


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PRISM_HOME"] = str(tmp_path / "prism-home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_cli_rpc_demo(tmp_path: Path) -> None:
    completed = run_example("cli_rpc_demo.py", env=clean_env(tmp_path))
    lines = completed.stdout.splitlines()
    assert "reply 1: Mock reply to: Hello (turn 1)" in lines
    assert "reply 2: Mock reply to: Tell me more (turn 2)" in lines
    assert "abort: {'sessionId': 'demo', 'aborted': True}" in lines
    assert "prompt 3: Agent run aborted" in lines
    assert "refused: unknown command: 'delete-everything'" in lines
    assert lines[-2:] == ["exit code: 0", "session file lines: 5"]


def shell_examples() -> list[tuple[str, str]]:
    """(commands, expected output) pairs: each ```sh block in docs/cli.md
    followed directly by a ```text block showing its output."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    # A command block may not run on past its own closing fence into a later
    # block (an unpaired ```sh block before a paired one).
    pairs = re.findall(r"```sh\n((?:(?!```).)*?)```\n+```text\n(.*?)```", doc, flags=re.S)
    assert pairs, "docs/cli.md lost its shell examples"
    return pairs


def test_docs_shell_examples_print_what_the_docs_show(tmp_path: Path) -> None:
    for commands, expected in shell_examples():
        completed = subprocess.run(
            ["bash", "-e", "-c", commands],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
            env=clean_env(tmp_path),
        )
        assert completed.returncode == 0, (commands, completed.stderr)
        assert completed.stdout == expected, commands


def test_cli_host_agent(tmp_path: Path) -> None:
    completed = run_example("cli_host_agent.py", env=clean_env(tmp_path))
    assert completed.stdout.splitlines() == [
        "prism --agent: 2 + 3 = 5 | audit: add -> 5",
        "serve_rpc: 2 + 3 = 5 exit 0",
    ]
