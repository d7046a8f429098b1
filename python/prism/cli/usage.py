"""The CLI's one usage error, in a module of its own so that the option
checks (``cli/options.py``) and the helpers they call (``agent_loader``,
``provider_config``) all raise it without importing each other."""

from __future__ import annotations

__all__ = ["UsageProblem", "has_blank_or_control"]


class UsageProblem(Exception):
    """Invalid flags, values or config: reported on one line, exit code 2."""


def has_blank_or_control(value: str) -> bool:
    """Whether a name (a model id, a provider name) holds whitespace or a
    control character: never part of a real one, and a line break in it
    would forge the next line of a log or a config file."""
    return any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in value)
