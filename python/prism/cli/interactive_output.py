"""What the interactive session prints for a run: the answer as markdown
(rich) or plain text, and one folded line per tool call and result.

Markdown is rendered block by block as each block closes, not by
re-rendering the whole answer: a printed block is never drawn again, so a
long answer costs one parse per block plus a preview, scrolls like plain
output, and nothing taller than the screen has to be redrawn (rich ``Live``
cannot redraw lines that scrolled away). Only the block still open is
shown live, at a bounded refresh rate, cropped to the screen's height.

The deltas arrive redacted: the runtime passes each block's deltas through
one ``prism.security.StreamRedactor``, so a secret a provider splits across
deltas is masked whole before any listener (this one included) sees it.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

REFRESH_PER_SECOND = 8
CODE_THEME = "monokai"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Blocks that end at a blank line (lists and indented code may go on after one).
_ENDS_AT_BLANK = frozenset(
    {"paragraph_open", "table_open", "blockquote_open", "heading_open", "hr", "fence"}
)


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class PlainText:
    """Answer text as it streams, unformatted."""

    def __init__(self) -> None:
        self._open_line = False

    def write(self, text: str) -> None:
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
            self._open_line = not text.endswith("\n")

    def finish(self) -> None:
        if self._open_line:
            _say("")
        self._open_line = False


class MarkdownText:
    """Answer text rendered as markdown: closed blocks printed once, the
    open block previewed in a ``rich.live.Live`` region."""

    def __init__(self, console: Console) -> None:
        from markdown_it import MarkdownIt

        self._console = console
        self._parser = MarkdownIt().enable("strikethrough").enable("table")  # rich's own
        self._pending = ""  # the text of the blocks not printed yet
        self._scanned = 0  # offset in _pending of the first line not yet scanned
        self._fence: str | None = None  # the opening line of the fence we are inside
        self._printed = False
        self._live: Any = None

    def write(self, text: str) -> None:
        if not text:
            return
        self._pending += text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" in text and self._scan_closed_lines():
            self._print_closed_blocks()
        if self._live is None and self._pending.strip():
            from rich.live import Live

            self._live = Live(
                _Preview(self),
                console=self._console,
                refresh_per_second=REFRESH_PER_SECOND,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def finish(self) -> None:
        """Print whatever is left (the answer ended, or was cut short)."""
        rest, self._pending, self._scanned, self._fence = self._pending, "", 0, None
        try:
            if rest.strip():
                self._print_markdown(rest)
        finally:
            if self._live is not None:
                self._live.stop()
                self._live = None
            self._printed = False

    def _scan_closed_lines(self) -> bool:
        """Follow the lines completed since the last scan; True when one of
        them may have closed a block (a blank line, a heading, a fence)."""
        end = self._pending.rfind("\n") + 1
        lines = self._pending[self._scanned : end].split("\n")[:-1]
        self._scanned = end
        may_close = False
        for line in lines:
            fence = _FENCE.match(line)
            if self._fence is not None:
                opener = _FENCE.match(self._fence)
                assert opener is not None
                marker = opener.group(1)
                if fence and fence.group(1)[0] == marker[0] and len(fence.group(1)) >= len(marker):
                    if not line.strip().strip(marker[0]):
                        self._fence = None
                        may_close = True
            elif fence:
                self._fence = line
                may_close = True
            elif not line.strip() or line.lstrip().startswith("#"):
                may_close = True
        return may_close

    def _print_closed_blocks(self) -> None:
        lines = self._pending.split("\n")
        complete = len(lines) - 1  # the lines a newline has ended
        blocks = [t for t in self._parser.parse(self._pending) if t.level == 0 and t.nesting >= 0]
        if not blocks or blocks[-1].map is None:
            return
        last = blocks[-1]
        assert last.map is not None
        upto = complete if self._closed(last.type, last.map[1], lines) else last.map[0]
        if upto <= 0:
            return
        done = "\n".join(lines[:upto]) + "\n"
        self._pending = "\n".join(lines[upto:])
        self._scanned = max(0, self._scanned - len(done))
        if done.strip():
            self._print_markdown(done)

    def _closed(self, kind: str, end: int, lines: list[str]) -> bool:
        """Whether the last block (``kind``, ending before line ``end``) can
        no longer grow: any other block closes only when the next starts."""
        complete = len(lines) - 1
        if kind not in _ENDS_AT_BLANK or end > complete or self._fence is not None:
            return False
        if kind in ("heading_open", "hr", "fence"):
            return True
        return complete > end and all(not line.strip() for line in lines[end:complete])

    def _print_markdown(self, text: str) -> None:
        """Print blocks, one blank line from the blocks printed before.

        rich pads some elements with blank lines of their own (a list or a
        quote starts with one, a code block ends with one); rendered apart,
        those would double the spacing, so blank edges are trimmed."""
        from rich.markdown import Markdown
        from rich.segment import Segment

        console = self._console
        lines = console.render_lines(
            Markdown(text, code_theme=CODE_THEME), console.options, pad=False
        )
        while lines and _blank(lines[-1]):
            lines.pop()
        start = 0
        while start < len(lines) and _blank(lines[start]):
            start += 1
        if start == len(lines):
            return
        segments: list[Segment] = [Segment.line()] if self._printed else []
        for line in lines[start:]:
            segments += [*line, Segment.line()]
        console.print(_Segments(segments), end="")
        self._printed = True

    def preview_text(self, height: int) -> str:
        """The open block's last ``height`` lines (with its fence's opening
        line, so a long code block still previews as code)."""
        lines = self._pending.split("\n")
        if len(lines) <= height:
            return self._pending
        tail = lines[-height:]
        if self._fence is not None:
            tail = [self._fence, *tail]
        return "\n".join(tail)


def _blank(line: list[Any]) -> bool:
    """A line that shows nothing: spaces without a background (a code
    block's padding has one, and stays)."""
    return all(not seg.text.strip() and not (seg.style and seg.style.bgcolor) for seg in line)


class _Segments:
    """Already rendered lines, printed as they are."""

    def __init__(self, segments: list[Any]) -> None:
        self._segments = segments

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self._segments


class _Preview:
    """The live region: the open block, cropped to the screen's bottom."""

    def __init__(self, text: MarkdownText) -> None:
        self._text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.markdown import Markdown
        from rich.segment import Segment

        height = max(1, console.size.height - 2)
        source = self._text.preview_text(height)
        if not source.strip():
            return
        rendered = console.render_lines(Markdown(source, code_theme=CODE_THEME), options, pad=False)
        shown = rendered[-height:]
        for number, line in enumerate(shown):
            yield from line
            if number < len(shown) - 1:
                yield Segment.line()


class RunOutput:
    """Prints one run's events: answer text (markdown or plain; the runtime
    has redacted it), folded tool lines, errors."""

    def __init__(self, console: Console | None) -> None:
        self._text: PlainText | MarkdownText = (
            MarkdownText(console) if console is not None else PlainText()
        )

    def text(self, delta: str) -> None:
        self._text.write(delta)

    def end_text(self) -> None:
        self._text.finish()

    def line(self, text: str) -> None:
        self.end_text()
        _say(text)
