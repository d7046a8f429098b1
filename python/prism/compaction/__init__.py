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

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
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
    from prism.compaction.observational_memory import (
        create_observational_memory_compaction_strategy,
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

_EXPORTS: dict[str, str] = {
    "TRUNCATION_MARKER": "prism.compaction.default",
    "DefaultCompactionStrategy": "prism.compaction.default",
    "create_default_compaction_strategy": "prism.compaction.default",
    "LlmCompactionError": "prism.compaction.llm",
    "LlmCompactionStrategy": "prism.compaction.llm",
    "create_llm_compaction_extension": "prism.compaction.llm",
    "create_llm_compaction_strategy": "prism.compaction.llm",
    "prepare_llm_compaction": "prism.compaction.llm",
    "create_observational_memory_compaction_strategy": "prism.compaction.observational_memory",
    "DEFAULT_KEEP_RECENT_ENTRIES": "prism.compaction.options",
    "DEFAULT_MAX_SUMMARY_CHARS": "prism.compaction.options",
    "DEFAULT_STRATEGY_NAME": "prism.compaction.options",
    "CompactionContext": "prism.compaction.options",
    "CompactionOptions": "prism.compaction.options",
    "CompactionResult": "prism.compaction.options",
    "CompactionStrategy": "prism.compaction.options",
    "coerce_compaction_options": "prism.compaction.options",
    "is_compaction_entry_data": "prism.compaction.options",
    "ShouldCompactContext": "prism.compaction.triggers",
    "assert_compaction_trigger": "prism.compaction.triggers",
    "resolve_should_compact": "prism.compaction.triggers",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

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
