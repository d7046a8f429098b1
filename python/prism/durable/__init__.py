"""Runs that survive their process under a durable-execution engine.

Prism's own durable runs (``durable=True``, ``session.resume()``) need no
engine: see docs/durable.md. This package is for running under an engine
that recovers a run by replaying it (``prism.durable.dbos``, optional extra
``prism-harness[dbos]``), and for writing such an integration: a
``RunJournal`` (``prism.runtime.context``) that ``run_journaled`` runs a
session's run under, most easily a ``ReplayJournal`` subclass that
overrides ``record`` and ``sleep``. ``import prism.durable`` never imports DBOS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.durable.journal import (
        ReplayJournal,
        result_from_record,
        result_to_record,
        run_journaled,
    )
    from prism.errors import (
        ReplayDivergedError,
    )
    from prism.runtime.context import (
        RunJournal,
    )

_EXPORTS: dict[str, str] = {
    "ReplayJournal": "prism.durable.journal",
    "result_from_record": "prism.durable.journal",
    "result_to_record": "prism.durable.journal",
    "run_journaled": "prism.durable.journal",
    "ReplayDivergedError": "prism.errors",
    "RunJournal": "prism.runtime.context",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "ReplayDivergedError",
    "ReplayJournal",
    "RunJournal",
    "result_from_record",
    "result_to_record",
    "run_journaled",
]
