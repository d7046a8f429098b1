"""Run options -> the settings a run is created with.

Every per-run option is checked here, once, when the run is claimed: a bad
option is a ``ConfigError`` before anything is stored or emitted. Kept out
of ``session.py`` so the session only decides *when* a run starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.contracts import ModelConfig
from prism.errors import ConfigError
from prism.runtime.config import AgentConfig, validate_model, validate_positive_int
from prism.runtime.options import coerce_compaction_options, coerce_retry_options
from prism.runtime.structured import output_for_run

__all__ = ["resolve_run_settings", "run_attention"]


def resolve_run_settings(
    config: AgentConfig,
    current_model: ModelConfig,
    *,
    model: Any = None,
    system: Any = None,
    retry: Any = None,
    compaction: Any = None,
    max_tool_rounds: Any = None,
    metadata: Any = None,
    attention: Any = None,
    output_type: Any = None,
    output_mode: Any = "auto",
    durable: Any = None,
    persist_session_state: Any = None,
) -> dict[str, Any]:
    """The ``RunSettings`` fields for a run given ``config`` and the session's
    ``current_model``; options left ``None`` fall back to the agent's."""
    for name, value in (("durable", durable), ("persist_session_state", persist_session_state)):
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"run option {name} must be a bool, got {value!r}")
    if system is None:
        run_system: tuple[str, ...] = ()
    elif isinstance(system, str):
        run_system = (system,) if system else ()
    elif isinstance(system, Sequence) and all(isinstance(s, str) for s in system):
        run_system = tuple(system)
    else:
        raise ConfigError("run option system must be a string or a list of strings")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ConfigError("run option metadata must be a mapping")
    if retry is None:
        run_retry = config.retry
    elif retry is False:
        run_retry = None
    else:
        run_retry = coerce_retry_options(retry)
    run_model = validate_model(model, "run option model") if model is not None else None
    if run_model is not None:
        config.check_provider(run_model, "run option model")
    if compaction is None:
        run_compaction = config.compaction
    elif compaction is False:
        run_compaction = None
    else:
        run_compaction = coerce_compaction_options(compaction, run_model or current_model)
    output = output_for_run(config, run_model or current_model, output_type, output_mode)
    declarations = config.tools.declarations()
    if output is not None:
        run_system = (*run_system, output.instructions())
        declarations.extend(output.extra_tools())
    return {
        "model": run_model,
        "system": run_system,
        "retry": run_retry,
        "compaction": run_compaction,
        "max_tool_rounds": (
            config.max_tool_rounds
            if max_tool_rounds is None
            else validate_positive_int(max_tool_rounds, "max_tool_rounds", minimum=0)
        ),
        "metadata": dict(metadata or {}),
        "tool_declarations": declarations,
        "attention": run_attention(config.attention_compiler, attention),
        "output": output,
        "durable": config.durable if durable is None else durable,
        "persist_state": (
            config.persist_session_state if persist_session_state is None else persist_session_state
        ),
    }


def run_attention(agent_compiler: Any, overlay: Any) -> Any:
    """The run's compiler: the agent's, narrowed (or switched off) by the run."""
    if agent_compiler is None and overlay is None:
        return None
    from prism.attention import resolve_run_compiler

    return resolve_run_compiler(agent_compiler, overlay)
