"""docs/getting-started.md runs as written: every Python block is a complete
script, run in a fresh interpreter in an empty directory, and says what the
tutorial says it says. The README links the page first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"

# What each block prints (in page order); None: runs without output checks.
EXPECTED: list[list[str] | None] = [
    ["20 USD is 210 NOK.", "{'description': 'Dollars to convert.', 'type': 'number'}"],
    None,  # a real provider: built, never called
    ["Hello, world!"],
    ["message 3", "refused: unknown session id 'support-43'"],
    ["test passed"],
    None,  # the five-line configuration
    ["turns the gate shrank:", "compactions: 1"],
]


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_every_block_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    blocks = python_blocks()
    assert len(blocks) == len(EXPECTED), "a block was added or removed: update EXPECTED"
    for index, (code, expected) in enumerate(zip(blocks, EXPECTED, strict=True)):
        workdir = tmp_path / f"block{index}"
        workdir.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=workdir,
        )
        assert done.returncode == 0, f"block {index}:\n{done.stderr}"
        for text in expected or []:
            assert text in done.stdout, f"block {index}: {text!r} not in\n{done.stdout}"


def test_the_gate_shrank_turns_in_the_long_session(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", python_blocks()[-1]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    shrunk = re.search(r"turns the gate shrank: (\d+)", done.stdout)
    assert shrunk is not None and int(shrunk.group(1)) > 0, done.stdout + done.stderr


def test_readme_links_the_tutorial_first() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where to read next", 1)[1]
    links = re.findall(r"\]\((docs/[^)]+)\)", section)
    assert links[0] == "docs/getting-started.md"
