"""What a Python host adds to the ``prism`` command: its own commands and
extensions (``prism.cli.main(argv, commands=..., extensions=...)``).

Kept apart from ``prism.cli.host`` so ``main`` can record them without
importing the runtime.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prism.extensions import CommandDefinition, ExtensionLike


@dataclass(frozen=True, slots=True)
class HostContributions:
    commands: tuple[CommandDefinition, ...] = ()
    extensions: tuple[ExtensionLike, ...] = ()


# Set by prism.cli.main for the duration of one invocation; the typer app in
# between knows nothing about it, the host reads it when it is created.
HOST_CONTRIBUTIONS: ContextVar[HostContributions | None] = ContextVar(
    "prism_cli_host_contributions", default=None
)


def current_contributions() -> HostContributions:
    return HOST_CONTRIBUTIONS.get() or HostContributions()
