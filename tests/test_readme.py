"""The README's Python example must run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_exactly_two_set_up_and_go_commands() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Set up and go", 1)[1].split("\n## ", 1)[0]
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)
    commands = [line.split("#")[0].strip() for block in shell for line in block.splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


def test_readme_example_runs() -> None:
    blocks = python_blocks()
    assert blocks, "README lost its Python example"
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "2 + 3 = 5" in done.stdout
