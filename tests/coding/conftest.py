"""Fixtures for the coding tool tests (helpers live in coding_helpers.py)."""

from coding_helpers import call, events, tools, workspace

__all__ = ["call", "events", "tools", "workspace"]
