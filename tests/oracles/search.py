"""Pure-Python reference of ``prism._native.search_files`` for trees with no
ignore files and no globs: every non-hidden, non-binary file under the root
(hidden directories skipped too), each line matched by the regex, files
sorted by path, lines by number, caps applied as the native code does."""

from __future__ import annotations

import os
import re
from typing import Any


def search_files(
    root: str, pattern: str, *, literal: bool = False, max_per_file: int = 50, max_total: int = 500
) -> dict[str, Any]:
    regex = re.compile(re.escape(pattern) if literal else pattern)
    files: list[dict[str, Any]] = []
    searched = 0
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                data = handle.read()
            searched += 1
            if b"\0" in data:
                continue
            lines = data.decode("utf-8").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            hits = [(n, line, True) for n, line in enumerate(lines, 1) if regex.search(line)]
            if hits:
                # the native search stops at the cap: a cut file counts one past it
                count = min(len(hits), max_per_file + 1)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                files.append({"path": rel, "matches": count, "lines": hits[:max_per_file]})
    files.sort(key=lambda f: f["path"])
    total = sum(f["matches"] for f in files)
    truncated = any(f["matches"] > max_per_file for f in files)
    budget = max_total
    kept = []
    for f in files:
        if budget == 0:
            truncated = True
            continue
        if len(f["lines"]) > budget:
            truncated = True
            f = {**f, "lines": f["lines"][:budget]}
            budget = 0
        else:
            budget -= len(f["lines"])
        kept.append(f)
    return {
        "files": kept,
        "files_searched": searched,
        "total_matches": total,
        "truncated": truncated,
    }
