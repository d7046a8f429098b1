"""Session-side compaction: manual ``session.compact()`` and the once-per-run
auto-compaction check. Strategies and triggers live in ``prism.compaction``;
this module owns events, the ``compaction`` middleware call and the append.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from prism.contracts import SessionEntry
from prism.errors import ConfigError
from prism.runtime import _deps

if TYPE_CHECKING:
    from prism.runtime.loop import RunState
    from prism.runtime.session import AgentSession


def _option(options: Any, name: str, default: Any = None) -> Any:
    if isinstance(options, dict):
        return options.get(name, default)
    return getattr(options, name, default)


def _merged_options(session: AgentSession, overrides: dict[str, Any]) -> Any:
    """The agent's compaction options with ``overrides`` (snake_case fields) on top."""
    base = session.agent.config.compaction
    module = _deps.compaction_module()
    if module is None:
        merged = dict(base or {})
        merged.update(overrides)
        return merged
    options_cls = module.CompactionOptions
    if base is None:
        base = options_cls()
    if not overrides:
        return base
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(base)})
    if unknown:
        raise ConfigError(f"unknown compaction option(s) {unknown}")
    return dataclasses.replace(base, **overrides)


async def _run_strategy(session: AgentSession, options: Any, trigger: str) -> Any:
    module = _deps.compaction_module()
    branch = list(session.branch.entries)
    if module is None:
        raise ConfigError("compaction needs prism.compaction, which is not available")
    strategy = _option(options, "strategy")
    if strategy is None:
        kwargs: dict[str, Any] = {}
        for name in ("keep_recent_entries", "max_summary_chars"):
            value = _option(options, name)
            if value is not None:
                kwargs[name] = value
        secrets = tuple(_option(options, "secrets", ()) or ()) + session.agent.config.secrets
        strategy = module.create_default_compaction_strategy(secrets=secrets, **kwargs)
    context = module.CompactionContext(
        session_id=session.id,
        entries=branch,
        trigger=trigger,
        keep_recent_entries=_option(options, "keep_recent_entries"),
        max_summary_chars=_option(options, "max_summary_chars"),
        secrets=tuple(_option(options, "secrets", ()) or ()) + session.agent.config.secrets,
        metadata=dict(_option(options, "metadata", {}) or {}),
        leaf_id=session.branch.leaf_id,
        new_entry_id=session.new_entry_id,
    )
    result = await strategy.compact(context)
    return context, result


def _compaction_entry(session: AgentSession, result: Any, trigger: str) -> SessionEntry:
    """The one entry to append: the strategy's compaction entry re-homed under
    the current leaf (the runtime owns ids and parent links)."""
    produced = [
        e for e in (getattr(result, "entries", None) or []) if e.get("kind") == "compaction"
    ]
    if len(produced) > 1:
        raise ConfigError("a compaction strategy must produce at most one compaction entry")
    if produced:
        entry: dict[str, Any] = dict(produced[0])
        data = dict(entry.get("data") or {})
    else:
        entry = {"summary": getattr(result, "summary", "")}
        data = {}
    data.setdefault("throughEntryId", session.branch.leaf_id)
    data.setdefault("keepEntryIds", [])
    data.setdefault("strategy", "custom")
    data.setdefault("trigger", trigger)
    entry.update(
        {
            "id": entry.get("id") or session.new_entry_id(),
            "sessionId": session.id,
            "parentId": None,
            "kind": "compaction",
            "summary": getattr(result, "summary", entry.get("summary", "")),
            "data": data,
        }
    )
    return entry  # type: ignore[return-value]


async def compact_session(
    session: AgentSession, overrides: dict[str, Any], *, trigger: str, run: RunState | None
) -> SessionEntry:
    """Run the strategy on the current branch and append one compaction entry."""
    options = _merged_options(session, overrides) if run is None else run.compaction
    run_id = run.run_id if run is not None else None
    hub = session._hub
    hub.emit({"type": "compaction_started", "trigger": trigger}, run_id)
    context, result = await _run_strategy(session, options, trigger)
    middleware = session.agent.config.middleware
    if middleware is not None and middleware.has("compaction"):
        updated = await middleware.run("compaction", {"context": context, "result": result})
        if isinstance(updated, dict) and updated.get("result") is not None:
            result = updated["result"]
    entry = _compaction_entry(session, result, trigger)
    (stored,) = await session._append_chain([entry])
    hub.emit(
        {
            "type": "compaction_finished",
            "trigger": trigger,
            "entryId": stored["id"],
            "summary": stored["summary"],  # type: ignore[typeddict-item]
        },
        run_id,
    )
    return stored


async def maybe_auto_compact(session: AgentSession, run: RunState) -> None:
    """Asked once per run, after the input is appended and before assembly."""
    options = run.compaction
    if options is None or session.branch.last_kind == "compaction":
        return
    module = _deps.compaction_module()
    if module is None:
        threshold = _option(options, "threshold_entries")
        if threshold is None or len(session.branch.entries) <= threshold:
            return
    else:
        ctx = module.ShouldCompactContext(
            session_id=session.id,
            entry_count=len(session.branch.entries),
            entries=session.branch.entries,
            messages=session.branch.messages,
            model=session.current_model,
            metadata=dict(_option(options, "metadata", {}) or {}),
            attention=session.agent.config.attention_compiler,
        )
        if not await module.resolve_should_compact(options, ctx):
            return
    await compact_session(session, {}, trigger="auto", run=run)
