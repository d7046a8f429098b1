"""Putting a run together: settings resolved from the run options, a fresh
progress, the port to its session, and the step runner that fits it (plain,
durable, or under a replaying engine's journal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prism.runtime.branch import BranchCache
from prism.runtime.config import AgentConfig
from prism.runtime.context import (
    AppendBatch,
    AttentionState,
    Emit,
    Run,
    RunClaim,
    RunJournal,
    RunPort,
    RunProgress,
    RunSettings,
)
from prism.runtime.durable_steps import DurableSteps, JournaledSteps
from prism.runtime.resolve import resolve_run_settings
from prism.runtime.steps import Steps
from prism.stores.base import SessionStore

__all__ = ["new_run"]


def new_run(
    config: AgentConfig,
    port: RunPort,
    journal: RunJournal | None = None,
    *,
    resolve: bool = True,
    **options: Any,
) -> Run:
    """A run on ``port`` with ``options`` resolved (``ConfigError`` for a bad
    one); with ``resolve=False`` the options are ``RunSettings`` fields as
    they are (manual compaction)."""
    if resolve:
        options = resolve_run_settings(config, port.branch.model or config.model, **options)
    settings = RunSettings(config=config, **options)
    progress = RunProgress()
    steps: Steps
    if journal is not None:
        port.claim.run_id = journal.run_id  # a replaying engine's run: its id
        steps = JournaledSteps(settings, port, progress, journal)
    elif settings.durable:
        steps = DurableSteps(settings, port, progress)
    else:
        steps = Steps(settings, port, progress)
    return Run(settings, progress, port, steps)


def new_port(
    session_id: str,
    claim: RunClaim,
    branch: BranchCache,
    attention: AttentionState,
    emit: Emit,
    append: AppendBatch,
    new_id: Callable[[], str],
    store: SessionStore | None = None,
) -> RunPort:
    return RunPort(
        session_id=session_id,
        claim=claim,
        branch=branch,
        attention_state=attention,
        emit_event=emit,
        append_batch=append,
        new_id=new_id,
        store=store,
    )
