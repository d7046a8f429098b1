"""LLM compaction: a model writes the summary (docs/compaction.md).

The provider-free default strategy stays the default; this one is opt-in.
It cuts the branch by token budget (never between a tool call and its
result), summarizes the older part with a summary model, updates a previous
summary instead of summarizing it again, summarizes the beginning of a
split turn with one extra call, and records the files the session read and
changed. Secrets are redacted before the request and again in the result.
"""

from prism.compaction.llm.extension import (
    LLM_COMPACTION_EXTENSION_NAME,
    create_llm_compaction_extension,
)
from prism.compaction.llm.files import (
    FileOperations,
    collect_file_operations,
    format_file_operations,
)
from prism.compaction.llm.options import (
    DEFAULT_RESERVE_TOKENS,
    LLM_COMPACTION_STRATEGY_NAME,
    THINKING_LEVELS,
    LlmCompactionOptions,
)
from prism.compaction.llm.prepare import (
    DEFAULT_KEEP_RECENT_TOKENS,
    LlmCompactionCutPoint,
    LlmCompactionPreparation,
    estimate_entry_tokens,
    estimate_message_tokens,
    estimate_text_tokens,
    find_llm_compaction_cut_point,
    prepare_llm_compaction,
)
from prism.compaction.llm.prompts import (
    DEFAULT_PROMPTS,
    SPLIT_TURN_PROMPT,
    SUMMARY_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    UPDATE_SUMMARY_PROMPT,
    CompactionPrompts,
)
from prism.compaction.llm.request import (
    LlmCompactionError,
    build_summary_request,
    compose_prompt,
)
from prism.compaction.llm.serialize import (
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    serialize_compaction_conversation,
)
from prism.compaction.llm.strategy import LlmCompactionStrategy, create_llm_compaction_strategy

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "DEFAULT_PROMPTS",
    "DEFAULT_RESERVE_TOKENS",
    "LLM_COMPACTION_EXTENSION_NAME",
    "LLM_COMPACTION_STRATEGY_NAME",
    "SPLIT_TURN_PROMPT",
    "SUMMARY_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "THINKING_LEVELS",
    "UPDATE_SUMMARY_PROMPT",
    "CompactionPrompts",
    "FileOperations",
    "LlmCompactionCutPoint",
    "LlmCompactionError",
    "LlmCompactionOptions",
    "LlmCompactionPreparation",
    "LlmCompactionStrategy",
    "build_summary_request",
    "collect_file_operations",
    "compose_prompt",
    "create_llm_compaction_extension",
    "create_llm_compaction_strategy",
    "estimate_entry_tokens",
    "estimate_message_tokens",
    "estimate_text_tokens",
    "find_llm_compaction_cut_point",
    "format_file_operations",
    "prepare_llm_compaction",
    "serialize_compaction_conversation",
]
