"""Coercing the option objects ``create_agent`` and ``run`` accept."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from prism._options import coerce_options
from prism.compaction import CompactionOptions
from prism.compaction import coerce_compaction_options as _coerce_compaction
from prism.contracts import ModelConfig
from prism.errors import ConfigError
from prism.retry import RetryOptions


class RunOptions(TypedDict, total=False):
    """Per-run options shared by ``run``, ``stream`` and ``run_sync`` (all
    optional; docs/runtime.md has the effect of each)."""

    model: ModelConfig
    system: str | Sequence[str]
    retry: RetryOptions | Mapping[str, Any] | bool
    compaction: CompactionOptions | Mapping[str, Any] | bool
    max_tool_rounds: int
    metadata: Mapping[str, Any]
    attention: Any
    output_type: Any
    output_mode: Literal["auto", "response_format", "native", "tool", "prompted"]
    durable: bool
    persist_session_state: bool


RUN_OPTION_NAMES: frozenset[str] = frozenset(RunOptions.__optional_keys__)


def check_run_option_names(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - RUN_OPTION_NAMES)
    if unknown:
        raise ConfigError(f"unknown run option(s) {unknown}; expected {sorted(RUN_OPTION_NAMES)}")


def coerce_retry_options(value: Any) -> RetryOptions | None:
    """``None``/``False``: off; ``True``: defaults; ``RetryOptions`` or its camelCase dict."""
    return coerce_options(value, RetryOptions, what="retry")


# What ``compaction=True`` means: compact once the next request would fill 90%
# of the model's input window.
DEFAULT_COMPACTION_TRIGGER: Mapping[str, Any] = {"type": "input_ratio", "ratio": 0.9}


def coerce_compaction_options(
    value: Any, model: Mapping[str, Any] | None = None
) -> CompactionOptions | None:
    """``None``/``False``: off; ``True``: the default trigger
    (:data:`DEFAULT_COMPACTION_TRIGGER`), whose cap is checked against
    ``model`` now; otherwise the rule of :mod:`prism._options`, as for retry."""
    if value is True:
        from prism.attention import resolve_input_cap

        try:
            resolve_input_cap(None, model)
        except (TypeError, ValueError) as error:
            raise ConfigError(
                "compaction=True compacts at 90% of the model's input window, which cannot be"
                f" resolved here ({error}); give the model limits (model['limits']"
                "['contextWindow']) or pass a trigger, e.g. compaction={'trigger':"
                " {'type': 'threshold_entries', 'entries': 200}}"
            ) from None
        return CompactionOptions(trigger=dict(DEFAULT_COMPACTION_TRIGGER))
    return _coerce_compaction(value)


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Streamed tool-call arguments -> (dict, error message or None)."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        # str(error) reads "Expecting ',' delimiter: line 1 column 8 (char 7)";
        # it names the position, never the document.
        return {}, f"tool call arguments are not valid JSON: {error}"
    except RecursionError:
        return {}, "tool call arguments are nested too deeply to parse; send a flatter value"
    if not isinstance(value, dict):
        return {}, "tool call arguments must be a JSON object"
    return value, None
