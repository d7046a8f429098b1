"""An inert extension: registers the strategy, and optionally the recall
tool and the ``om:*`` commands, as contributions. Setup starts no worker,
compacts nothing, reads no settings, resolves no credential and calls no
provider, tool or command."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prism.compaction.observational_memory.strategy import (
    STRATEGY_NAME,
    create_observational_memory_compaction_strategy,
)
from prism.errors import ConfigError
from prism.extensions.kernel import Extension, ExtensionAPI, define_extension
from prism.memory.commands import create_observational_memory_commands
from prism.memory.tools import create_recall_memory_tool
from prism.security.redaction import SecretRedactor

EXTENSION_NAME = "observational-memory"


def _options(value: object, what: str) -> dict[str, Any] | None:
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"create_observational_memory_extension: {what} must be a mapping")
    return dict(value)


def create_observational_memory_extension(
    *,
    name: str = EXTENSION_NAME,
    strategy: Mapping[str, Any] | bool = True,
    recall_tool: Mapping[str, Any] | None = None,
    commands: Mapping[str, Any] | None = None,
    redactor: SecretRedactor,
    disabled: bool = False,
) -> Extension:
    """``strategy``: ``True`` (defaults), ``False`` (not registered) or keyword
    options of :func:`create_observational_memory_compaction_strategy`.
    ``recall_tool``: options of :func:`create_recall_memory_tool` (at least
    ``get_entries``). ``commands``: options of
    :func:`create_observational_memory_commands` (``get_entries``, optionally
    ``runtime``). ``redactor`` (the agent's) masks what the tool and commands return; the
    strategy uses the one each compaction context carries. ``disabled``: the
    extension loads and registers nothing. Everything is built here, so a bad
    option fails now, not during ``kernel.load``."""
    strategy_options = {} if strategy is True else _options(strategy, "strategy")
    tool_options = _options(recall_tool, "recall_tool")
    command_options = _options(commands, "commands")
    built_strategy = (
        create_observational_memory_compaction_strategy(**strategy_options)
        if strategy_options is not None
        else None
    )
    built_tool = (
        create_recall_memory_tool(**{"redactor": redactor, **tool_options})
        if tool_options is not None
        else None
    )
    built_commands = (
        create_observational_memory_commands(**{"redactor": redactor, **command_options})
        if command_options is not None
        else []
    )

    def setup(api: ExtensionAPI) -> None:
        if disabled:
            return
        if built_strategy is not None:
            api.register_compaction_strategy(built_strategy, name=built_strategy.name)
        if built_tool is not None:
            api.register_tool(built_tool)
        for command in built_commands:
            api.register_command(command)

    return define_extension(
        name,
        setup,
        description="Observational memory: fast compaction strategy, recall tool, om:* commands.",
    )


__all__ = ["EXTENSION_NAME", "STRATEGY_NAME", "create_observational_memory_extension"]
