"""The host callback that supplies a session's current-branch entries."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from prism.errors import ConfigError

GetEntries: TypeAlias = Callable[
    [str], "Sequence[Mapping[str, Any]] | Awaitable[Sequence[Mapping[str, Any]]] | None"
]


def check_get_entries(get_entries: object, where: str) -> GetEntries:
    if not callable(get_entries):
        raise ConfigError(f"{where}: get_entries must be a callable (session_id) -> entries")
    return get_entries


async def load_entries(get_entries: GetEntries, session_id: str) -> list[Mapping[str, Any]]:
    """Call the host's callback (sync or async); ``None`` means no entries."""
    result: Any = get_entries(session_id)
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        return []
    if isinstance(result, str | bytes | Mapping) or not isinstance(result, Sequence):
        raise ConfigError("get_entries must return a list of session entries")
    return list(result)


def session_id_of(ctx: object) -> str | None:
    """The session a command context is about: ``ctx.session.id``,
    ``ctx.session_id`` or ``ctx["sessionId"]`` (hosts shape ctx freely)."""
    session = getattr(ctx, "session", None)
    candidate = getattr(session, "id", None) if session is not None else None
    if candidate is None:
        candidate = getattr(ctx, "session_id", None)
    if candidate is None and isinstance(ctx, Mapping):
        candidate = ctx.get("sessionId", ctx.get("session_id"))
    return candidate if isinstance(candidate, str) and candidate else None
