"""The attention compiler: a per-turn gate that shrinks an over-ratio request
(old thinking first, then old tool results) on a clone, never the store.
See docs/attention.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.attention.calibration import (
        CALIBRATION_ENTRY,
        TokenCalibration,
        TokenSplit,
        split_request_tokens,
    )
    from prism.attention.compile import (
        AttentionOutcome,
        apply_attention_plan,
        compile_attention,
        create_attention_measure_cache,
        estimate_compiled_tokens,
    )
    from prism.attention.frontier import (
        AttentionStickyFrontier,
        create_attention_sticky_frontier,
    )
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
    from prism.attention.policy import (
        POLICIES,
        ToolResultFold,
        cache_multipliers,
        proactive_ratio,
    )
    from prism.attention.report import (
        AttentionReport,
        is_attention_budget_error,
    )
    from prism.attention.triggers import (
        AttentionTruncationTrigger,
        assert_compaction_trigger,
        create_attention_truncation_trigger,
    )
    from prism.errors import (
        AttentionBudgetError,
        AttentionConfigError,
    )

_EXPORTS: dict[str, str] = {
    "CALIBRATION_ENTRY": "prism.attention.calibration",
    "TokenCalibration": "prism.attention.calibration",
    "TokenSplit": "prism.attention.calibration",
    "split_request_tokens": "prism.attention.calibration",
    "AttentionOutcome": "prism.attention.compile",
    "apply_attention_plan": "prism.attention.compile",
    "compile_attention": "prism.attention.compile",
    "create_attention_measure_cache": "prism.attention.compile",
    "estimate_compiled_tokens": "prism.attention.compile",
    "AttentionStickyFrontier": "prism.attention.frontier",
    "create_attention_sticky_frontier": "prism.attention.frontier",
    "AttentionCompiler": "prism.attention.options",
    "AttentionCompilerOptions": "prism.attention.options",
    "create_attention_compiler": "prism.attention.options",
    "resolve_input_cap": "prism.attention.options",
    "resolve_run_compiler": "prism.attention.options",
    "FRONTIER_CUSTOM_TYPE": "prism.attention.persist",
    "frontier_checkpoint_entry": "prism.attention.persist",
    "restore_attention_frontier": "prism.attention.persist",
    "POLICIES": "prism.attention.policy",
    "ToolResultFold": "prism.attention.policy",
    "cache_multipliers": "prism.attention.policy",
    "proactive_ratio": "prism.attention.policy",
    "AttentionReport": "prism.attention.report",
    "is_attention_budget_error": "prism.attention.report",
    "AttentionTruncationTrigger": "prism.attention.triggers",
    "assert_compaction_trigger": "prism.attention.triggers",
    "create_attention_truncation_trigger": "prism.attention.triggers",
    "AttentionBudgetError": "prism.errors",
    "AttentionConfigError": "prism.errors",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "CALIBRATION_ENTRY",
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
    "TokenCalibration",
    "TokenSplit",
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
    "split_request_tokens",
]
