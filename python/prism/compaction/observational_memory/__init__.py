"""Observational memory's compaction strategy and the memory it renders.

The strategy (``create_observational_memory_compaction_strategy``) renders
memory already recorded on the branch as the compaction summary, without a
model call. The modules beside it are what it reads: the record shapes
(``records``, ``ids``), the fold of memory records (``ledger``), the branch
projection (``projection``), the rendering (``render``) and the pool sizes
(``settings``). All pure, no I/O, nothing above the runtime.

Observational memory itself (the workers that record memories, the recall
tool, the ``om:*`` commands, the extension) is an application built on the
runtime and lives in :mod:`prism.memory` (docs/memory.md), which also
re-exports every name here.
"""

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

__all__ = [
    "FOLDED",
    "OBSERVATIONS_DROPPED",
    "OBSERVATIONS_RECORDED",
    "REFLECTIONS_RECORDED",
    "SETTINGS_KEY",
    "STRATEGY_NAME",
    "FoldedMemory",
    "InvalidMemoryIdError",
    "Observation",
    "ObservationalMemoryCompactionStrategy",
    "ObservationalMemoryLedger",
    "ObservationalMemoryProjection",
    "ObservationalMemorySettings",
    "Reflection",
    "build_observational_memory_projection",
    "create_folded_memory_details",
    "create_memory_id",
    "create_observational_memory_compaction_strategy",
    "fold_observational_memory_ledger",
    "is_memory_id",
    "render_observational_memory",
    "resolve_observational_memory_settings",
]
