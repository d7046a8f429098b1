"""A seeded coding-session generator: no network, no files, same bytes per seed.

Four messages per turn in the shape a coding agent produces: the user asks,
the assistant thinks and calls a tool (read/grep/edit/run/list), the tool
returns a 1-40 KB payload (source code, a log, a JSON listing), and the
assistant answers. The bytes depend only on the seed, so every benchmark
built on it (the attention benchmark, ``benches/``) measures the same input
on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

__all__ = ["TOOLS", "code", "iter_messages", "text", "tool_arguments", "tool_result_value"]

_WORDS = (
    "the function returns a value when called with the cache key and a timeout "
    "we should refactor this module so the parser handles errors before writing "
    "état café naïve → résumé 日本語 ok"
).split()
_CODE = [
    "def handle(request: Request) -> Response:",
    '    """Route one request; never raises."""',
    "    if not request.path.startswith('/api'):",
    '        return Response(404, {"error": "not found"})',
    "\tfor key, value in sorted(items.items()):",
    '        log.info("key=%s value=%r", key, value)',
    "    return json.dumps(payload, separators=(',', ':'))",
    "class SessionStore(Protocol):",
    "    async def append(self, entry: SessionEntry) -> None: ...",
    '    path = "C:\\\\Users\\\\dev\\\\project\\\\main.py"',
    "    # TODO: handle the torn last line → quarantine it",
    '    raise ValueError(f"bad line {n}: {reason!r}")',
    "",
    "import os, sys  # noqa: E401",
    "    x = {'a': [1, 2, 3], 'b': None, 'c': 3.14159}",
]
TOOLS = ("read_file", "grep", "edit_file", "run_command", "list_dir")
"""The tools the generated assistant calls."""


def text(rng: random.Random, lo: int, hi: int) -> str:
    """Prose of ``lo`` to ``hi`` characters (mixed scripts, so tokens vary)."""
    target = rng.randint(lo, hi)
    out: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:target]


def code(rng: random.Random, size: int) -> str:
    """``size`` characters of source-code-like lines."""
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(_CODE)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def tool_result_value(rng: random.Random, tool: str, size: int) -> Any:
    """What ``tool`` returns, about ``size`` characters of it."""
    if tool == "run_command":
        return {"exitCode": rng.choice([0, 0, 0, 1]), "stdout": code(rng, size), "stderr": ""}
    if tool == "list_dir":
        names = [f"src/module_{i}/file_{rng.randrange(10**6)}.py" for i in range(size // 40)]
        return {"entries": [{"path": n, "size": rng.randrange(10**5), "dir": False} for n in names]}
    return code(rng, size)


def tool_arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    """The arguments of a call to ``tool``."""
    path = f"src/module_{rng.randrange(50)}/file_{rng.randrange(200)}.py"
    if tool == "edit_file":
        return {"path": path, "old": code(rng, 200), "new": code(rng, 300)}
    if tool == "run_command":
        return {"command": "pytest -q tests/", "timeoutMs": 60_000}
    if tool == "grep":
        return {"pattern": "def handle", "path": "src", "ignoreCase": True}
    return {"path": path}


def _result_size(rng: random.Random, small: bool) -> int:
    if small:
        return rng.randint(100, 1_800)
    # 1-40 KB, skewed small the way real reads and logs are.
    return rng.randint(1_000, 20_000) if rng.random() < 0.7 else rng.randint(20_000, 40_000)


def iter_messages(
    seed: int = 7, turns: int = 225, *, small: bool = False
) -> Iterator[dict[str, Any]]:
    """Four messages per turn: user, assistant (thinking + tool call), tool, assistant.

    ``small=True`` shrinks tool results to 0.1-1.8 KB (session-file benchmarks).
    """
    rng = random.Random(seed)
    for turn in range(turns):
        yield {"role": "user", "content": [{"type": "text", "text": text(rng, 40, 600)}]}
        tool = rng.choice(TOOLS)
        call_id = f"call_{turn}"
        yield {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "text": text(rng, 200, 1500) if small else text(rng, 300, 3000),
                    "signature": "sig",
                },
                {"type": "text", "text": text(rng, 20, 200)},
                {
                    "type": "tool_call",
                    "id": call_id,
                    "name": tool,
                    "arguments": tool_arguments(rng, tool),
                },
            ],
        }
        yield {
            "role": "tool",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": call_id,
                    "name": tool,
                    "result": tool_result_value(rng, tool, _result_size(rng, small)),
                }
            ],
        }
        yield {"role": "assistant", "content": [{"type": "text", "text": text(rng, 50, 800)}]}
