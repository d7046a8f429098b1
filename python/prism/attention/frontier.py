"""The sticky frontier: which thinking turns and tool-call ids were shrunk.

Re-applying these rows every turn keeps a request's prefix byte-identical to
the previous one, so a prompt cache survives; un-stubbing would rewrite it.
Bounded (newest kept) so a very long session cannot grow it without limit.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_THINKING_KEYS = 256
MAX_TOOL_CALL_IDS = 256
MAX_KEY_LENGTH = 512


class _BoundedKeys:
    """An insertion-ordered set keeping the newest ``limit`` keys."""

    __slots__ = ("_keys", "_limit")

    def __init__(self, limit: int) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    def add(self, key: str) -> None:
        # Re-adding refreshes a key, so rows still in use are the last evicted.
        keys = self._keys
        if key in keys:
            keys.move_to_end(key)
            return
        keys[key] = None
        if len(keys) > self._limit:
            keys.popitem(last=False)

    def add_all(self, keys: Sequence[str]) -> None:
        """``add`` each key in order. A turn re-applies its sticky keys in
        request order, which is the order they already have after the first
        re-application; then moving them to the end changes nothing, so only
        the new keys after them are added (same result, no per-key loop)."""
        n = len(self._keys)
        if n and len(keys) >= n and list(keys[:n]) == list(self._keys):
            keys = keys[n:]
        for key in keys:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Any:
        return iter(self._keys)

    def as_set(self) -> OrderedDict[str, None]:
        return self._keys

    def clear(self) -> None:
        self._keys.clear()


class AttentionStickyFrontier:
    """Session-owned ``{thinking, toolCallIds}`` key sets (see module doc)."""

    __slots__ = (
        "_compiled_history",
        "_measure_cache",
        "_persisted",
        "_version",
        "clone_memo",
        "fold_cache",
        "stable_message",
        "stable_rows",
        "thinking",
        "token_scale",
        "tool_call_ids",
    )

    def __init__(self) -> None:
        self.thinking = _BoundedKeys(MAX_THINKING_KEYS)
        self.tool_call_ids = _BoundedKeys(MAX_TOOL_CALL_IDS)
        self._version = 0
        self._measure_cache: Any = None
        # Clones of sticky rows, reused while the same message comes back.
        self.clone_memo: dict[int, tuple[Any, Any, Any]] = {}
        # tool_result_fold answers per call id (None = keep the digest stub),
        # so a re-applied row never calls the host summarizer twice.
        self.fold_cache: dict[str, str | None] = {}
        # Key sets of the last checkpoint written to (or read from) a store.
        self._persisted: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        # Provider-billed tokens per estimated token for this session's recent
        # requests (prism.attention.calibration sets it): the gate divides its
        # cap by it, so it trips where the provider's count, not chars/4, is.
        self.token_scale = 1.0
        # The history rows the last compile emitted, and how many leading
        # rows of the latest compile equal them (see note_compiled).
        self._compiled_history: list[Any] | None = None
        self.stable_rows: int | None = None
        self.stable_message: Any = None

    def note_compiled(self, history: Sequence[Any]) -> None:
        """Record the history rows a compile emitted (after its stubs and
        strips) and set :attr:`stable_rows`: how many leading rows are equal
        to the previous compile's, so a prompt cache written by the previous
        request holds them (None on the first compile: no claim). Between
        trips that is every row the previous request had; a trip cuts it to
        the first row it changed. :attr:`stable_message` is the last of those
        rows (the very object the request carries), or None.

        Rows are compared by identity first (the session's messages and the
        memoized clones of sticky rows come back as the same objects), so a
        turn costs one C-level pass over the row pointers; equal content
        (a rebuilt clone) counts as unchanged too."""
        rows = history if isinstance(history, list) else list(history)
        previous = self._compiled_history
        self._compiled_history = rows
        if previous is None:
            self.stable_rows = None
            self.stable_message = None
            return
        count = len(previous)
        if count <= len(rows) and rows[:count] == previous:
            same = count
        else:
            same = 0
            for old, new in zip(previous, rows, strict=False):
                if old is not new and old != new:
                    break
                same += 1
        self.stable_rows = same
        self.stable_message = rows[same - 1] if same else None

    @property
    def measure_cache(self) -> Any:
        """The session's per-row estimate cache for ``incremental`` compilers,
        created on first use. It rides on the frontier because both are
        session-owned and handed to every assembly together."""
        if self._measure_cache is None:
            from prism import _native

            self._measure_cache = _native.AttentionMeasureCache()
        return self._measure_cache

    @property
    def version(self) -> int:
        """Bumped on every change; caches keyed on the frontier compare it."""
        return self._version

    def add(self, thinking: Iterable[str] = (), tool_call_ids: Iterable[str] = ()) -> None:
        self.thinking.add_all(list(thinking))
        self.tool_call_ids.add_all(list(tool_call_ids))
        self._version += 1

    def clear(self) -> None:
        self.thinking.clear()
        self.tool_call_ids.clear()
        self.clone_memo.clear()
        self.fold_cache.clear()
        self._compiled_history = None
        self.stable_rows = None
        self.stable_message = None
        self._version += 1

    def __len__(self) -> int:
        return len(self.thinking) + len(self.tool_call_ids)

    def _key_sets(self) -> tuple[frozenset[str], frozenset[str]]:
        return frozenset(self.thinking), frozenset(self.tool_call_ids)

    def pending_checkpoint(self) -> dict[str, list[str]] | None:
        """``to_json()`` when the key sets differ from the last checkpoint,
        else None. Re-applying sticky rows only refreshes their order, which
        is not worth a store write; call :meth:`mark_persisted` once the
        checkpoint is stored."""
        if self._key_sets() == self._persisted:
            return None
        return self.to_json()

    def mark_persisted(self, data: Mapping[str, Any]) -> None:
        """Record ``data`` (a ``to_json()`` result) as the stored checkpoint."""
        thinking = data.get("thinking") or ()
        ids = data.get("toolCallIds") or ()
        self._persisted = (frozenset(thinking), frozenset(ids))

    def to_json(self) -> dict[str, list[str]]:
        return {"thinking": list(self.thinking), "toolCallIds": list(self.tool_call_ids)}

    @classmethod
    def from_json(cls, data: object) -> AttentionStickyFrontier:
        """Restore a persisted frontier; malformed entries are dropped one by one.

        A hand-edited or truncated checkpoint must never fail a resume, so
        anything that is not a non-empty bounded string is skipped.
        """
        frontier = cls()
        if isinstance(data, Mapping):
            for name, keys in (
                ("thinking", frontier.thinking),
                ("toolCallIds", frontier.tool_call_ids),
            ):
                values = data.get(name)
                if isinstance(values, list | tuple):
                    for value in values:
                        if isinstance(value, str) and 0 < len(value) <= MAX_KEY_LENGTH:
                            keys.add(value)
        return frontier

    def __repr__(self) -> str:
        return (
            f"AttentionStickyFrontier(thinking={len(self.thinking)}, "
            f"tool_call_ids={len(self.tool_call_ids)})"
        )


def create_attention_sticky_frontier() -> AttentionStickyFrontier:
    """A fresh, empty frontier (256 thinking keys + 256 tool-call ids, newest kept)."""
    return AttentionStickyFrontier()
