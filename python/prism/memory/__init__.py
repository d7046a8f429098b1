"""Observational memory: source-backed long-session memory (docs/memory.md).

Workers record observations and reflections as ``custom`` session entries;
the compaction strategy renders them as the summary without a model call;
the model recalls the evidence behind any memory by its exact id.

An application built on the runtime's public API: its workers are
throwaway agents made with ``prism.runtime.create_agent``. It sits above
the runtime; the strategy and the pure record shapes, fold, projection and
rendering it reads live below, in ``prism.compaction.observational_memory``,
and are re-exported here so a host needs one import path.

Pure utilities (fold, projection, render, recall, ids, settings) do no I/O.
The runtime runs workers only when a host calls ``flush()`` or its
``after_run()`` gate. Tool, command and extension factories are inert until
a host registers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.compaction.observational_memory.ids import (
        InvalidMemoryIdError,
        create_memory_id,
        is_memory_id,
    )
    from prism.compaction.observational_memory.ledger import (
        ObservationalMemoryLedger,
        fold_observational_memory_ledger,
    )
    from prism.compaction.observational_memory.projection import (
        ObservationalMemoryProjection,
        build_observational_memory_projection,
        create_folded_memory_details,
    )
    from prism.compaction.observational_memory.records import (
        FOLDED,
        OBSERVATIONS_DROPPED,
        OBSERVATIONS_RECORDED,
        REFLECTIONS_RECORDED,
        FoldedMemory,
        Observation,
        Reflection,
    )
    from prism.compaction.observational_memory.render import (
        render_observational_memory,
    )
    from prism.compaction.observational_memory.settings import (
        SETTINGS_KEY,
        ObservationalMemorySettings,
        resolve_observational_memory_settings,
    )
    from prism.compaction.observational_memory.strategy import (
        STRATEGY_NAME,
        ObservationalMemoryCompactionStrategy,
        create_observational_memory_compaction_strategy,
    )
    from prism.memory.commands import (
        STATUS_COMMAND,
        VIEW_COMMAND,
        VIEW_USAGE,
        create_memory_status_command,
        create_memory_view_command,
        create_observational_memory_commands,
    )
    from prism.memory.extension import (
        EXTENSION_NAME,
        create_observational_memory_extension,
    )
    from prism.memory.recall import (
        MemoryRecall,
        recall_observational_memory,
    )
    from prism.memory.runtime import (
        FlushReport,
        ObservationalMemoryRuntime,
        WorkerReport,
        create_observational_memory_runtime,
    )
    from prism.memory.tools import (
        RECALL_TOOL_NAME,
        create_recall_memory_tool,
    )

_EXPORTS: dict[str, str] = {
    "InvalidMemoryIdError": "prism.compaction.observational_memory.ids",
    "create_memory_id": "prism.compaction.observational_memory.ids",
    "is_memory_id": "prism.compaction.observational_memory.ids",
    "ObservationalMemoryLedger": "prism.compaction.observational_memory.ledger",
    "fold_observational_memory_ledger": "prism.compaction.observational_memory.ledger",
    "ObservationalMemoryProjection": "prism.compaction.observational_memory.projection",
    "build_observational_memory_projection": "prism.compaction.observational_memory.projection",
    "create_folded_memory_details": "prism.compaction.observational_memory.projection",
    "FOLDED": "prism.compaction.observational_memory.records",
    "OBSERVATIONS_DROPPED": "prism.compaction.observational_memory.records",
    "OBSERVATIONS_RECORDED": "prism.compaction.observational_memory.records",
    "REFLECTIONS_RECORDED": "prism.compaction.observational_memory.records",
    "FoldedMemory": "prism.compaction.observational_memory.records",
    "Observation": "prism.compaction.observational_memory.records",
    "Reflection": "prism.compaction.observational_memory.records",
    "render_observational_memory": "prism.compaction.observational_memory.render",
    "SETTINGS_KEY": "prism.compaction.observational_memory.settings",
    "ObservationalMemorySettings": "prism.compaction.observational_memory.settings",
    "resolve_observational_memory_settings": "prism.compaction.observational_memory.settings",
    "STRATEGY_NAME": "prism.compaction.observational_memory.strategy",
    "ObservationalMemoryCompactionStrategy": "prism.compaction.observational_memory.strategy",
    "create_observational_memory_compaction_strategy": "prism.compaction.observational_memory.strategy",
    "STATUS_COMMAND": "prism.memory.commands",
    "VIEW_COMMAND": "prism.memory.commands",
    "VIEW_USAGE": "prism.memory.commands",
    "create_memory_status_command": "prism.memory.commands",
    "create_memory_view_command": "prism.memory.commands",
    "create_observational_memory_commands": "prism.memory.commands",
    "EXTENSION_NAME": "prism.memory.extension",
    "create_observational_memory_extension": "prism.memory.extension",
    "MemoryRecall": "prism.memory.recall",
    "recall_observational_memory": "prism.memory.recall",
    "FlushReport": "prism.memory.runtime",
    "ObservationalMemoryRuntime": "prism.memory.runtime",
    "WorkerReport": "prism.memory.runtime",
    "create_observational_memory_runtime": "prism.memory.runtime",
    "RECALL_TOOL_NAME": "prism.memory.tools",
    "create_recall_memory_tool": "prism.memory.tools",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "EXTENSION_NAME",
    "FOLDED",
    "OBSERVATIONS_DROPPED",
    "OBSERVATIONS_RECORDED",
    "RECALL_TOOL_NAME",
    "REFLECTIONS_RECORDED",
    "SETTINGS_KEY",
    "STATUS_COMMAND",
    "STRATEGY_NAME",
    "VIEW_COMMAND",
    "VIEW_USAGE",
    "FlushReport",
    "FoldedMemory",
    "InvalidMemoryIdError",
    "MemoryRecall",
    "Observation",
    "ObservationalMemoryCompactionStrategy",
    "ObservationalMemoryLedger",
    "ObservationalMemoryProjection",
    "ObservationalMemoryRuntime",
    "ObservationalMemorySettings",
    "Reflection",
    "WorkerReport",
    "build_observational_memory_projection",
    "create_folded_memory_details",
    "create_memory_id",
    "create_memory_status_command",
    "create_memory_view_command",
    "create_observational_memory_commands",
    "create_observational_memory_compaction_strategy",
    "create_observational_memory_extension",
    "create_observational_memory_runtime",
    "create_recall_memory_tool",
    "fold_observational_memory_ledger",
    "is_memory_id",
    "recall_observational_memory",
    "render_observational_memory",
    "resolve_observational_memory_settings",
]
