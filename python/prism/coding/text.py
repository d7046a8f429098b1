"""Text handling for read/write/edit: encodings, line endings, numbering,
and where an edit's old text nearly matched."""

from __future__ import annotations

import codecs
import difflib
from dataclasses import dataclass

_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    """With ``\\r\\n`` turned into ``\\n`` (``crlf`` remembers it)."""
    encoding: str
    bom: bytes
    crlf: bool
    note: str
    lines: int
    """Line count (a last line without a newline counts)."""


def image_type(data: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC.items():
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def decode(data: bytes) -> Decoded | None:
    """The file's text, or ``None`` when it looks binary (a NUL byte in the
    first 8 KiB of a file that is not UTF-16)."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                return None
            return _lines(text, encoding, bom, f"decoded as {encoding} (byte-order mark)")
    if b"\0" in data[:8192]:
        return None
    # Line endings and counts are found on the bytes (memchr speed): in UTF-8
    # and Latin-1 a newline byte is always a newline.
    carriage = data.find(b"\r")  # one-byte search: memchr; "\r\n" in data is slower
    crlf = carriage >= 0 and b"\r\n" in data[carriage:]
    count = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    try:
        text = data.decode("utf-8")
        encoding, note = "utf-8", ""
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        encoding, note = "latin-1", "not valid UTF-8: decoded as Latin-1"
    if crlf:
        text = text.replace("\r\n", "\n")
    return Decoded(text, encoding, b"", crlf, note, count)


def _lines(text: str, encoding: str, bom: bytes, note: str) -> Decoded:
    crlf = "\r\n" in text
    if crlf:
        text = text.replace("\r\n", "\n")
    return Decoded(text, encoding, bom, crlf, note, _count_lines(text))


def _count_lines(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def encode(text: str, like: Decoded | None) -> bytes:
    """``text`` (``\\n`` line ends) in the encoding, BOM and line endings of
    the file it replaces (UTF-8 and ``\\n`` for a new file)."""
    if like is None:
        return text.encode("utf-8")
    if like.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return like.bom + text.encode(like.encoding)


def _nth_line_start(text: str, number: int) -> int:
    """Index where 1-based line ``number`` starts (``len(text)`` past the end)."""
    index = 0
    for _ in range(number - 1):
        found = text.find("\n", index)
        if found < 0:
            return len(text)
        index = found + 1
    return index


def number_lines(
    text: str,
    offset: int,
    limit: int,
    max_line_chars: int,
    max_bytes: int,
    total: int | None = None,
) -> tuple[str, int, int, list[str]]:
    """``cat -n`` style lines ``offset..offset+limit-1`` (1-based), each cut at
    ``max_line_chars``, the whole cut at ``max_bytes``. Returns the text, the
    first and last line shown, and notes saying what was cut. Only the shown
    region is split into lines (a 5 MB file is not split whole)."""
    if total is None:
        total = _count_lines(text)
    start = max(offset, 1)
    end = min(total, start + limit - 1)
    begin = _nth_line_start(text, start)
    stop = begin
    for _ in range(end - start + 1):
        found = text.find("\n", stop)
        stop = len(text) if found < 0 else found + 1
    lines = text[begin:stop].split("\n")
    out: list[str] = []
    notes: list[str] = []
    size = 0
    long_lines = 0
    last = start - 1
    for number in range(start, end + 1):
        line = lines[number - start]
        if len(line) > max_line_chars:
            line = line[:max_line_chars] + " [... line cut]"
            long_lines += 1
        row = f"{number:6}\t{line}"
        size += len(row) + 1
        if size > max_bytes:
            notes.append(f"output cut at {max_bytes} bytes after line {last}")
            break
        out.append(row)
        last = number
    if long_lines:
        notes.append(f"{long_lines} line(s) longer than {max_line_chars} characters were cut")
    if last < total:
        notes.append(f"showing lines {start}-{last} of {total}; read on with offset={last + 1}")
    return "\n".join(out), start, last, notes


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def nearest_candidates(text: str, old: str, count: int = 3) -> list[str]:
    """Where ``old`` nearly occurs: the lines most like its first non-blank
    line, as ``line N: <text>`` (for a no-match error)."""
    wanted = next((line.strip() for line in old.split("\n") if line.strip()), "")
    if not wanted:
        return []
    lines = text.split("\n")
    scored: list[tuple[float, int]] = []
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    for number, line in enumerate(lines[:200_000], start=1):
        stripped = line.strip()
        if not stripped:
            continue
        matcher.set_seq1(stripped)
        if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
            continue
        ratio = matcher.ratio()
        if ratio >= 0.5:
            scored.append((ratio, number))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [f"line {n}: {lines[n - 1].strip()[:120]}" for _, n in scored[:count]]


def small_diff(before: str, old: str, new: str, index: int, context: int = 2) -> str:
    """A unified-style hunk for one replacement at ``index``, built from the
    replaced region only (a diff of the whole file would cost too much on big files)."""
    first = line_of(before, index)
    region_start = _back_lines(before, index, context)
    head_start = before.rfind("\n", 0, index) + 1
    end = index + len(old)
    line_end = before.find("\n", end)
    line_end = len(before) if line_end < 0 else line_end
    after_end = line_end
    for _ in range(context):
        if after_end >= len(before):
            break
        found = before.find("\n", after_end + 1)
        after_end = len(before) if found < 0 else found
    lead = before[region_start:head_start].split("\n")[:-1] if head_start > region_start else []
    shown_old = before[head_start:line_end].split("\n")
    shown_new = (before[head_start:index] + new + before[end:line_end]).split("\n")
    trail = before[line_end + 1 : after_end].split("\n") if after_end > line_end else []
    rows = [f"@@ -{first},{len(shown_old)} +{first},{len(shown_new)} @@"]
    rows += [f" {line}" for line in lead]
    rows += [f"-{line}" for line in shown_old[:40]]
    rows += [f"+{line}" for line in shown_new[:40]]
    if len(shown_old) > 40 or len(shown_new) > 40:
        rows.append("[... diff cut at 40 lines per side]")
    rows += [f" {line}" for line in trail]
    return "\n".join(rows)


def _back_lines(text: str, index: int, count: int) -> int:
    """Start of the line ``count`` lines above the one holding ``index``."""
    start = text.rfind("\n", 0, index) + 1
    for _ in range(count):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start
