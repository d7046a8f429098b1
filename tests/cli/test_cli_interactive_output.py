"""The interactive session's answer rendering (prism.cli.interactive_output),
in process on a rich console writing to a buffer: markdown printed block by
block reads the same as the whole answer rendered at once, however the
deltas are cut."""

from __future__ import annotations

import io
import random
import re
import sys

import pytest
from rich.console import Console
from rich.markdown import Markdown

from prism.cli.interactive_output import MarkdownText

ANSWERS = [
    "# Title\n\nSome **bold** text\nand more.\n\n```python\nx = 1\n\ny = 2\n```\n\n"
    "- a\n- b\n\n- c, the same loose list\n\nEnd para.\n",
    "Title\n=====\n\n> quote\n> more\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "---\n\n    indented\n\n    code\n\nlast without a newline",
    "para\n## heading right after\ntext\n~~~\nfenced ``` inside\n\n~~~\nunder\n---\n",
    "```\nnever closed\n\n# not a heading\n",
]


def console(out: io.StringIO) -> Console:
    return Console(file=out, width=70, force_terminal=False, color_system=None)


def shown(text: str) -> str:
    """What a reader sees, trailing spaces and runs of blank lines aside
    (rich gives a table a blank line below it; the blocks printed apart
    keep one blank line between any two, checked below)."""
    lines = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", lines)


def streamed(answer: str, seed: int) -> str:
    out = io.StringIO()
    stream = MarkdownText(console(out))
    pick = random.Random(seed)
    at = 0
    while at < len(answer):
        size = pick.randint(1, 9)
        stream.write(answer[at : at + size])
        at += size
    stream.finish()
    return out.getvalue()


@pytest.mark.parametrize("answer", ANSWERS)
def test_blocks_printed_as_they_close_read_like_the_whole_answer(answer: str) -> None:
    whole = io.StringIO()
    console(whole).print(Markdown(answer))
    for seed in range(25):
        assert shown(streamed(answer, seed)) == shown(whole.getvalue()), seed


def test_blocks_printed_apart_are_one_blank_line_apart() -> None:
    answer = "para\n\n- a\n- b\n\n> quote\n\n```\ncode\n```\n\nend\n"
    lines = [line.rstrip() for line in streamed(answer, 1).strip("\n").split("\n")]
    assert lines == ["para", "", " • a", " • b", "", "▌ quote", "", "", " code", "", "", "end"]


def test_a_closed_block_is_printed_before_the_answer_ends() -> None:
    out = io.StringIO()
    stream = MarkdownText(console(out))
    stream.write("# Heading\n")
    stream.write("A paragraph\nstill open")
    assert "Heading" in out.getvalue() and "paragraph" not in out.getvalue()
    stream.write(".\n\n- a list")
    assert "A paragraph still open." in out.getvalue() and "a list" not in out.getvalue()
    stream.finish()
    assert "• a list" in out.getvalue()


def test_the_preview_of_a_long_code_block_keeps_its_fence() -> None:
    stream = MarkdownText(console(io.StringIO()))
    stream.write("```python\n" + "".join(f"line{n} = {n}\n" for n in range(100)))
    preview = stream.preview_text(5)
    assert preview.split("\n")[0] == "```python" and "line99 = 99" in preview
    assert "line50" not in preview
    stream.finish()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_markdown_needs_a_terminal_and_is_off_with_no_color_or_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prism.cli.interactive import _console

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys, "stdout", _Terminal())
    assert isinstance(_console(True), Console)
    assert _console(False) is None  # --no-markdown
    monkeypatch.setenv("NO_COLOR", "1")
    assert _console(True) is None
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert _console(True) is None
