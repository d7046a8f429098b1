"""One nesting limit for values that come from outside (model output, tool results).

The native redactor and walks refuse values deeper than ``prism._native.MAX_DEPTH``
(100) and the stores' validators hit Python's recursion limit not far above,
so a model that nests tool-call arguments 99 levels deep used to kill the
run with a long, unredacted error path. Instead, values are checked once at
the edge against ``MAX_VALUE_DEPTH``, well below those limits (an entry adds
about six levels of envelope around a tool call's arguments), and a value
over it becomes a tool error the model can act on.
"""

from __future__ import annotations

from typing import Any, Final

from prism.security.secret_redactor import SecretRedactor

__all__ = ["MAX_VALUE_DEPTH", "describe_path", "too_deep_path", "tool_arguments_problem"]

MAX_VALUE_DEPTH: Final = 64
_SHOWN_SEGMENTS: Final = 3
_SEGMENT_CHARS: Final = 24


def too_deep_path(value: Any, limit: int = MAX_VALUE_DEPTH) -> list[str | int] | None:
    """The path to the first container nested deeper than ``limit`` levels
    in ``value`` (dicts, lists, tuples), or ``None`` when it fits.

    Iterative, so a 100,000-level value costs no recursion."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        current, depth, path = stack.pop()
        if isinstance(current, dict):
            children: Any = current.items()
        elif isinstance(current, list | tuple):
            children = enumerate(current)
        else:
            continue
        if depth >= limit:
            return list(path)
        for key, child in children:
            if isinstance(child, dict | list | tuple):
                segment = key if isinstance(key, int) else str(key)
                stack.append((child, depth + 1, (*path, segment)))
    return None


def tool_arguments_problem(arguments: Any, redactor: SecretRedactor) -> str | None:
    """The ``invalid_arguments`` message for arguments nested too deep, or None."""
    path = too_deep_path(arguments)
    if path is None:
        return None
    return (
        f"tool call arguments are nested deeper than {MAX_VALUE_DEPTH} levels "
        f"(at {describe_path(path, redactor)}); send a flatter value"
    )


def describe_path(path: list[str | int], redactor: SecretRedactor) -> str:
    """A short JSONPath-like rendering: the first and last few segments, each
    key redacted first and then clipped (a clipped key is never redacted)."""

    def show(segment: str | int) -> str:
        if isinstance(segment, int):
            return f"[{segment}]"
        text = redactor.redact_text(segment)
        if len(text) > _SEGMENT_CHARS:
            text = text[:_SEGMENT_CHARS] + "…"
        return "." + text

    if len(path) <= 2 * _SHOWN_SEGMENTS:
        return "$" + "".join(show(s) for s in path)
    head = "".join(show(s) for s in path[:_SHOWN_SEGMENTS])
    tail = "".join(show(s) for s in path[-_SHOWN_SEGMENTS:])
    return "$" + head + f"…({len(path) - 2 * _SHOWN_SEGMENTS} more)…" + tail
