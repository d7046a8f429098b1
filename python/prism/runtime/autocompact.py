"""Compaction inside the runtime: manual ``session.compact()`` and the
once-per-run auto-compaction check, both through a run's settings, port and
step runner. Strategies and triggers live in ``prism.compaction``; this
module owns the events, the ``compaction`` middleware call and the append.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from prism import _native
from prism._options import options_from_mapping
from prism.compaction import (
    CompactionContext,
    CompactionOptions,
    CompactionResult,
    CompactionStrategy,
    ShouldCompactContext,
    create_default_compaction_strategy,
    resolve_should_compact,
)
from prism.contracts import CompactionTrigger, SessionEntry
from prism.errors import ConfigError
from prism.runtime.calibrate import token_scale
from prism.runtime.config import AgentConfig
from prism.runtime.context import RunPort, RunSettings
from prism.runtime.steps import Steps


def merged_options(config: AgentConfig, overrides: Mapping[str, Any]) -> CompactionOptions:
    """The agent's compaction options with ``overrides`` on top (keys by the
    rule of :mod:`prism._options`)."""
    base = config.compaction or CompactionOptions()
    if not overrides:
        return base
    return dataclasses.replace(
        base, **options_from_mapping(CompactionOptions, overrides, what="compaction")
    )


def _strategy(config: AgentConfig, options: CompactionOptions) -> CompactionStrategy:
    if options.strategy is not None:
        return options.strategy
    kwargs: dict[str, Any] = {}
    if options.keep_recent_entries is not None:
        kwargs["keep_recent_entries"] = options.keep_recent_entries
    if options.max_summary_chars is not None:
        kwargs["max_summary_chars"] = options.max_summary_chars
    return create_default_compaction_strategy(**kwargs)


def _compaction_entry(port: RunPort, result: Any, trigger: CompactionTrigger) -> SessionEntry:
    """The one entry to append: the strategy's compaction entry, re-homed under
    the current leaf (the runtime owns ids, session ids and parent links)."""
    produced = [
        e for e in (getattr(result, "entries", None) or ()) if e.get("kind") == "compaction"
    ]
    if len(produced) > 1:
        raise ConfigError("a compaction strategy must produce at most one compaction entry")
    entry: dict[str, Any] = dict(produced[0]) if produced else {}
    data: dict[str, Any] = dict(entry.get("data") or {})
    data.setdefault("throughEntryId", port.branch.leaf_id)
    data.setdefault("keepEntryIds", [])
    data.setdefault("strategy", "custom")
    data.setdefault("trigger", trigger)
    summary = getattr(result, "summary", None)
    if not isinstance(summary, str):
        raise ConfigError("a compaction result needs a string summary")
    entry.update(
        {
            "id": entry.get("id") or port.new_entry_id(),
            "sessionId": port.session_id,
            "parentId": None,  # chained under the leaf at append time
            "kind": "compaction",
            "summary": summary,
            "data": data,
        }
    )
    return entry  # type: ignore[return-value]


async def compact_branch(
    settings: RunSettings,
    port: RunPort,
    steps: Steps,
    options: CompactionOptions,
    *,
    trigger: CompactionTrigger,
) -> SessionEntry:
    """Run the strategy on the current branch and append one compaction entry."""
    branch = port.branch
    if not any(entry["kind"] == "message" for entry in branch.entries):
        # Nothing to summarize: the entry would be an empty summary (issue 11).
        raise ConfigError("nothing to compact: the session's branch has no messages")
    port.emit({"type": "compaction_started", "trigger": trigger})
    config = settings.config
    context = CompactionContext(
        session_id=port.session_id,
        entries=list(branch.entries),
        trigger=trigger,
        keep_recent_entries=options.keep_recent_entries,
        max_summary_chars=options.max_summary_chars,
        redactor=config.redactor,
        metadata=dict(options.metadata),
        leaf_id=branch.leaf_id,
        new_entry_id=port.new_entry_id,
        # A strategy that calls a model retries the way the run would.
        retry=settings.retry,
        sleep=config.sleep,
        token_scale=token_scale(settings, settings.model_on(branch)),
    )

    async def summarize() -> CompactionResult:
        result: CompactionResult = await _strategy(config, options).compact(context)
        middleware = config.middleware
        if middleware is not None and middleware.has("compaction"):
            updated = await middleware.run("compaction", {"context": context, "result": result})
            if isinstance(updated, Mapping) and updated.get("result") is not None:
                result = updated["result"]
        return result

    # One recorded step: a replay does not ask a summarizing model again.
    result = await steps.recorded("prism.compaction", summarize, _to_record, _from_record)
    entry = _compaction_entry(port, result, trigger)
    (stored,) = await steps.append([entry])
    port.emit(
        {
            "type": "compaction_finished",
            "trigger": trigger,
            "entryId": stored["id"],
            "summary": stored["summary"],  # type: ignore[typeddict-item]
        }
    )
    return stored


def _to_record(produced: CompactionResult) -> dict[str, Any]:
    return {
        "summary": getattr(produced, "summary", None),
        "entries": list(getattr(produced, "entries", None) or ()),
    }


def _from_record(record: Any) -> CompactionResult:
    return CompactionResult(**record)


def _compiled_estimate(settings: RunSettings, port: RunPort) -> Any:
    """With the attention compiler on, an ``input_ratio`` trigger measures
    how full the gate is (``estimate_compiled_tokens``: its floor plus room
    for one more recent-sized result, in its trigger's frame), so compaction
    takes over where the compiler cannot keep up, not as soon as the raw
    history is long. None keeps the raw estimate."""
    compiler = settings.attention
    if compiler is None:
        if settings.config.token_calibration is None:
            return None
        # Calibrated: the plain estimate, in the provider's tokens.
        scale = token_scale(settings, settings.model_on(port.branch))
        messages = port.branch.messages
        return lambda: round(scale * sum(map(_native.estimate_message_tokens, messages)))
    from prism.attention import estimate_compiled_tokens

    messages = port.branch.messages
    # The gate's own frame already carries the calibrated scale (its cap is
    # divided by the frontier's token_scale), so this estimate is not scaled.
    return lambda: estimate_compiled_tokens(compiler, messages, frontier=port.frontier)


async def maybe_auto_compact(
    settings: RunSettings, port: RunPort, steps: Steps
) -> SessionEntry | None:
    """Asked once per run, after the input is appended and before assembly
    (and by ``session.auto_compact()``); returns the compaction entry when
    the trigger fired."""
    options = settings.compaction
    branch = port.branch
    if options is None or branch.last_kind == "compaction":
        return None
    ctx = ShouldCompactContext(
        session_id=port.session_id,
        entries=branch.entries,
        messages=branch.messages,
        # The run's model, not the session's: a per-run override moves the cap.
        model=settings.model_on(branch),
        metadata=options.metadata,
        attention=settings.config.attention_compiler,
        estimate_input_tokens=_compiled_estimate(settings, port),
    )
    if await resolve_should_compact(options, ctx):
        return await compact_branch(settings, port, steps, options, trigger="auto")
    return None
