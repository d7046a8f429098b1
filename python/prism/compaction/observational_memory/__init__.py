"""Observational memory: source-backed long-session memory (docs/memory.md).

Workers record observations and reflections as ``custom`` session entries;
the compaction strategy renders them as the summary without a model call;
the model recalls the evidence behind any memory by its exact id.

Pure utilities (fold, projection, render, recall, ids, settings) do no I/O.
The runtime runs workers only when a host calls ``flush()`` or its
``after_run()`` gate. Tool, command and extension factories are inert until
a host registers them.
"""

from prism.compaction.observational_memory.commands import (
    STATUS_COMMAND,
    VIEW_COMMAND,
    VIEW_USAGE,
    create_memory_status_command,
    create_memory_view_command,
    create_observational_memory_commands,
)
from prism.compaction.observational_memory.extension import (
    EXTENSION_NAME,
    create_observational_memory_extension,
)
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
from prism.compaction.observational_memory.recall import (
    MemoryRecall,
    recall_observational_memory,
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
from prism.compaction.observational_memory.render import render_observational_memory
from prism.compaction.observational_memory.runtime import (
    FlushReport,
    ObservationalMemoryRuntime,
    WorkerReport,
    create_observational_memory_runtime,
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
from prism.compaction.observational_memory.tools import (
    RECALL_TOOL_NAME,
    create_recall_memory_tool,
)

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
