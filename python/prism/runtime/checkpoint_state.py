"""Feature state that rides in a durable run's checkpoints (docs/durable.md).

A feature above the runtime (the coding tools' plan and todo list, say)
keeps per-session state in memory. Given to ``create_agent(checkpoint_state=
[...])``, each holder is asked for its session's state at every checkpoint
of a durable run (``"state": {key: data}``), and a resumed run hands the
newest checkpoint's data back before anything runs, so a process that
picks the run up has the state without re-reading anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from prism.errors import ConfigError

__all__ = ["CheckpointState", "carried_state", "check_checkpoint_state", "restore_carried"]

_KEY = re.compile(r"[a-z][a-zA-Z0-9_]{0,63}")


@runtime_checkable
class CheckpointState(Protocol):
    """Per-session state a durable run's checkpoints carry under
    ``state.<state_key>``: ``for_session`` returns JSON data (or None for
    nothing to carry), ``restore`` takes it back on resume."""

    @property
    def state_key(self) -> str: ...

    def for_session(self, session_id: str | None) -> Mapping[str, Any] | None: ...

    def restore(self, session_id: str | None, data: Mapping[str, Any]) -> None: ...


def check_checkpoint_state(values: object) -> tuple[CheckpointState, ...]:
    """Validate ``create_agent(checkpoint_state=...)``: holders with distinct keys."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise ConfigError("checkpoint_state must be a list of CheckpointState holders")
    seen: set[str] = set()
    for value in values:
        key = getattr(value, "state_key", None)
        if not isinstance(value, CheckpointState) or not isinstance(key, str):
            raise ConfigError(
                "checkpoint_state holders need state_key, for_session(session_id) and"
                f" restore(session_id, data); got {type(value).__name__}"
            )
        if not _KEY.fullmatch(key):
            raise ConfigError(f"checkpoint_state key {key[:80]!r} must look like 'coding'")
        if key in seen:
            raise ConfigError(f"checkpoint_state key {key!r} is given twice")
        seen.add(key)
    return tuple(values)


def carried_state(holders: Sequence[CheckpointState], session_id: str) -> dict[str, Any] | None:
    """What a checkpoint carries: ``{key: data}`` (None when nobody has any)."""
    state: dict[str, Any] = {}
    for holder in holders:
        data = holder.for_session(session_id)
        if data is not None:
            state[holder.state_key] = dict(data)
    return state or None


def restore_carried(
    holders: Sequence[CheckpointState],
    session_id: str,
    state: Mapping[str, Any] | None,
    warn: Callable[[str, str], None],
) -> None:
    """Hand each holder its data back. One that refuses it (raises) is
    warned about by field and exception type only (never the value), and
    the run goes on without that state."""
    if not state:
        return
    for holder in holders:
        data = state.get(holder.state_key)
        if data is None:
            continue
        field = f"state.{holder.state_key}"
        if not isinstance(data, Mapping):
            warn(field, "expected an object; dropped")
            continue
        try:
            holder.restore(session_id, data)
        except Exception as error:
            warn(field, f"could not be restored ({type(error).__name__}); dropped")
