"""The CLI's one usage error, in a module of its own so that the option
checks (``cli/options.py``) and the helpers they call (``agent_loader``,
``provider_config``) all raise it without importing each other."""

from __future__ import annotations

__all__ = ["UsageProblem"]


class UsageProblem(Exception):
    """Invalid flags, values or config: reported on one line, exit code 2."""
