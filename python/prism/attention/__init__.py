"""The attention compiler: a per-turn gate that shrinks an over-ratio request
(old thinking first, then old tool results) on a clone, never the store.
See docs/attention.md."""

from prism.attention.compile import (
    AttentionOutcome,
    apply_attention_plan,
    compile_attention,
    create_attention_measure_cache,
    estimate_compiled_tokens,
)
from prism.attention.frontier import AttentionStickyFrontier, create_attention_sticky_frontier
from prism.attention.options import (
    AttentionCompiler,
    AttentionCompilerOptions,
    create_attention_compiler,
    resolve_input_cap,
    resolve_run_compiler,
)
from prism.attention.persist import (
    FRONTIER_CUSTOM_TYPE,
    frontier_checkpoint_entry,
    restore_attention_frontier,
)
from prism.attention.policy import POLICIES, ToolResultFold, cache_multipliers, proactive_ratio
from prism.attention.report import AttentionReport, is_attention_budget_error
from prism.attention.triggers import (
    AttentionTruncationTrigger,
    assert_compaction_trigger,
    create_attention_truncation_trigger,
)
from prism.errors import AttentionBudgetError, AttentionConfigError

__all__ = [
    "FRONTIER_CUSTOM_TYPE",
    "POLICIES",
    "AttentionBudgetError",
    "AttentionCompiler",
    "AttentionCompilerOptions",
    "AttentionConfigError",
    "AttentionOutcome",
    "AttentionReport",
    "AttentionStickyFrontier",
    "AttentionTruncationTrigger",
    "ToolResultFold",
    "apply_attention_plan",
    "assert_compaction_trigger",
    "cache_multipliers",
    "compile_attention",
    "create_attention_compiler",
    "create_attention_measure_cache",
    "create_attention_sticky_frontier",
    "create_attention_truncation_trigger",
    "estimate_compiled_tokens",
    "frontier_checkpoint_entry",
    "is_attention_budget_error",
    "proactive_ratio",
    "resolve_input_cap",
    "resolve_run_compiler",
    "restore_attention_frontier",
]
