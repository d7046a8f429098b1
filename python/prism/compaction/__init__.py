"""Compaction: summarize older branch history into one ``compaction`` entry
without deleting or rewriting raw entries (docs/compaction.md).

The session runtime calls these; hosts can call them directly too:
``create_default_compaction_strategy`` / ``CompactionContext`` to compact,
``resolve_should_compact`` / ``ShouldCompactContext`` to decide when.
``create_llm_compaction_strategy`` (``prism.compaction.llm``) has a model
write the summary. Observational memory lives in
``prism.compaction.observational_memory`` (docs/memory.md); its strategy
factory is re-exported here, loaded on first use so ``import prism`` does
not pay for it.
"""

from typing import Any

from prism.compaction.default import (
    TRUNCATION_MARKER,
    DefaultCompactionStrategy,
    create_default_compaction_strategy,
)
from prism.compaction.llm import (
    LlmCompactionError,
    LlmCompactionStrategy,
    create_llm_compaction_extension,
    create_llm_compaction_strategy,
    prepare_llm_compaction,
)
from prism.compaction.options import (
    DEFAULT_KEEP_RECENT_ENTRIES,
    DEFAULT_MAX_SUMMARY_CHARS,
    DEFAULT_STRATEGY_NAME,
    CompactionContext,
    CompactionOptions,
    CompactionResult,
    CompactionStrategy,
    coerce_compaction_options,
    is_compaction_entry_data,
)
from prism.compaction.triggers import (
    ShouldCompactContext,
    assert_compaction_trigger,
    resolve_should_compact,
)

__all__ = [
    "DEFAULT_KEEP_RECENT_ENTRIES",
    "DEFAULT_MAX_SUMMARY_CHARS",
    "DEFAULT_STRATEGY_NAME",
    "TRUNCATION_MARKER",
    "CompactionContext",
    "CompactionOptions",
    "CompactionResult",
    "CompactionStrategy",
    "DefaultCompactionStrategy",
    "LlmCompactionError",
    "LlmCompactionStrategy",
    "ShouldCompactContext",
    "assert_compaction_trigger",
    "coerce_compaction_options",
    "create_default_compaction_strategy",
    "create_llm_compaction_extension",
    "create_llm_compaction_strategy",
    "create_observational_memory_compaction_strategy",
    "is_compaction_entry_data",
    "prepare_llm_compaction",
    "resolve_should_compact",
]


def __getattr__(name: str) -> Any:
    if name == "create_observational_memory_compaction_strategy":
        from prism.compaction.observational_memory import (
            create_observational_memory_compaction_strategy,
        )

        return create_observational_memory_compaction_strategy
    raise AttributeError(f"module 'prism.compaction' has no attribute {name!r}")
