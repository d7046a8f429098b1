"""Options read from camelCase JSON through dataclass field metadata
(prism._json_fields) instead of per-class key tables."""

from __future__ import annotations

import pytest

from prism._json_fields import camel_case, json_keys, read_json_fields
from prism.attention import AttentionCompilerOptions
from prism.compaction import CompactionOptions
from prism.compaction.llm.options import LlmCompactionOptions
from prism.errors import AttentionConfigError, ConfigError
from prism.retry import RetryOptions


def test_camel_case() -> None:
    assert camel_case("max_attempts") == "maxAttempts"
    assert camel_case("jitter") == "jitter"
    assert camel_case("max_tool_result_chars") == "maxToolResultChars"


# The wire keys each class accepted from its old hand-written table, less
# "secrets" of the compaction and retry options: both mask with the agent's
# one redactor and keep no secret list of their own.
WIRE_KEYS = {
    RetryOptions: [
        "maxAttempts", "baseDelayMs", "maxDelayMs", "jitter", "seed", "metadata",
    ],
    CompactionOptions: [
        "strategy", "thresholdEntries", "trigger", "keepRecentEntries", "maxSummaryChars",
        "metadata",
    ],
    AttentionCompilerOptions: [
        "triggerRatio", "compactRatio", "thinkingKeepTurns", "keepLast", "excludeTools",
        "maxInputTokens", "reserveTokens", "targetRatio", "incremental", "persistFrontier",
        "policy", "proactiveFloor",
    ],
    LlmCompactionOptions: [
        "model", "summaryModel", "credentialRequest", "providerOptions", "customInstructions",
        "thinkingLevel", "reserveTokens", "keepRecentTokens", "maxSummaryTokens",
        "maxOutputTokens", "maxToolResultChars", "trackFileOperations",
        "includeFileOperations",
    ],
}  # fmt: skip


@pytest.mark.parametrize("cls", list(WIRE_KEYS), ids=lambda cls: cls.__name__)
def test_the_wire_keys_are_the_ones_the_key_tables_had(cls: type) -> None:
    assert list(json_keys(cls)) == WIRE_KEYS[cls]


def test_a_field_json_cannot_carry_has_no_wire_key() -> None:
    with pytest.raises(AttentionConfigError, match="unknown attention compiler option"):
        AttentionCompilerOptions.from_json({"toolResultFold": None})
    # By its Python name it is reached (prism._options), and must be the object.
    with pytest.raises(ConfigError, match="retry policy must have a decide"):
        RetryOptions.from_json({"policy": "anything"})
    with pytest.raises(ConfigError, match="llm compaction option provider must be an AIProvider"):
        LlmCompactionOptions.from_json({"provider": "anything"})


def test_snake_case_reaches_fields_json_cannot_carry_for_python_callers() -> None:
    found = read_json_fields(AttentionCompilerOptions, {"tool_result_fold": None}, snake_case=True)
    assert found.values == {"tool_result_fold": None} and not found.problems


def test_field_metadata_coerces_json_values() -> None:
    assert RetryOptions.from_json({"maxAttempts": 2}).max_attempts == 2
    # Retry keeps no secrets: the agent's redactor masks its errors.
    with pytest.raises(ConfigError, match=r"'secrets': .*create_agent\(secrets="):
        RetryOptions.from_json({"secrets": ["sk-secret-value"], "maxAttempts": 2})

    def should_compact(_context: object) -> bool:
        return False

    compaction = CompactionOptions.from_json(
        {"trigger": {"type": "custom", "shouldCompact": should_compact}}
    )
    assert compaction.trigger == {"type": "custom", "should_compact": should_compact}


def test_problems_are_reported_in_key_order() -> None:
    with pytest.raises(ConfigError, match="compaction option 'keep_recent_entries' given twice"):
        CompactionOptions.from_json({"keepRecentEntries": 1, "keep_recent_entries": 2, "x": 1})
    with pytest.raises(ConfigError, match="unknown compaction option 'x'"):
        CompactionOptions.from_json({"x": 1, "keepRecentEntries": 1, "keep_recent_entries": 2})
    with pytest.raises(AttentionConfigError, match="'keep_last' given twice"):
        AttentionCompilerOptions.from_json({"keepLast": 2, "keep_last": 3})


def test_to_json_round_trips_the_attention_options() -> None:
    options = AttentionCompilerOptions(trigger_ratio=0.6, exclude_tools=("read",))
    assert AttentionCompilerOptions.from_json(options.to_json()) == options


def test_write_json_fields_spells_the_named_fields_in_camel_case_in_order() -> None:
    from prism._json_fields import write_json_fields
    from prism.evals.compare import CaseChange

    change = CaseChange("c1", 1.0, 0.5, ("exact",))
    written = write_json_fields(change, "case", "before", "after")
    assert list(written.items()) == [("case", "c1"), ("before", 1.0), ("after", 0.5)]
    options = AttentionCompilerOptions(trigger_ratio=0.6)
    assert write_json_fields(options, "trigger_ratio") == {"triggerRatio": 0.6}
