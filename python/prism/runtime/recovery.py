"""After a restart: which sessions hold an unfinished durable run, and
resuming them all (``Agent.unfinished_sessions`` / ``Agent.resume_all``).

A session's run is unfinished when the newest checkpoint on its branch (the
branch ending at the last appended entry, as a session loads it) is not an
``end``. Reading needs no lease; resuming takes the session's lease like any
run, so a session another worker is running is reported, not run twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prism.contracts import ErrorInfo
from prism.errors import error_info
from prism.runtime.branch import BranchCache
from prism.runtime.result import RunResult
from prism.stores.base import SessionStore

if TYPE_CHECKING:
    from prism.runtime.session import AgentSession
    from prism.security.redaction import SecretRedactor

_log = logging.getLogger("prism.runtime")


@dataclass(frozen=True, slots=True)
class ResumeAllReport:
    """What :func:`resume_all` did, by session id: ``resumed`` holds each
    resumed run's result (``None`` when it had finished meanwhile),
    ``failed`` the redacted error of each session that could not be resumed
    (a damaged checkpoint, a session another worker holds, a provider that
    failed again). One failure never stops the others."""

    resumed: dict[str, RunResult | None] = field(default_factory=dict)
    failed: dict[str, ErrorInfo] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        return {
            "resumed": {
                sid: (r.to_json() if r is not None else None) for sid, r in self.resumed.items()
            },
            "failed": dict(self.failed),
        }


async def has_unfinished_run(store: SessionStore, session_id: str) -> bool:
    """Whether ``session_id``'s current branch ends in an unfinished durable run."""
    entries = await store.list(session_id)
    return BranchCache(entries, None).has_unfinished_run


async def unfinished_sessions(store: SessionStore) -> list[str]:
    """The ids of ``store``'s sessions with an unfinished durable run, in the
    store's order. A session that cannot be read is logged (``prism.runtime``,
    WARNING) and left out: ``resume_all`` is where it is reported."""
    found: list[str] = []
    for session_id in await store.list_sessions():
        try:
            if await has_unfinished_run(store, session_id):
                found.append(session_id)
        except Exception as error:
            _log.warning("session %s could not be read: %s", session_id, type(error).__name__)
    return found


async def resume_sessions(
    sessions: Iterable[AgentSession],
    redactor: SecretRedactor,
    options: Mapping[str, Any],
) -> ResumeAllReport:
    """Resume each session in turn; a failure is recorded and the next goes on."""
    report = ResumeAllReport()
    for session in sessions:
        try:
            report.resumed[session.id] = await session.resume(**options)
        except Exception as error:
            report.failed[session.id] = error_info(error, redactor)
            _log.warning("session %s was not resumed: %s", session.id, report.failed[session.id])
    return report


__all__ = ["ResumeAllReport", "has_unfinished_run", "resume_sessions", "unfinished_sessions"]
