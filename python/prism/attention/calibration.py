"""A token estimate that calibrates itself from what the provider bills.

Prism budgets with ``ceil(chars / 4)`` per block plus 4 per message. That
undercounts JSON and code (short tokens) and overcounts plain English, so the
error depends on the request's *mix*. :class:`TokenCalibration` learns, per
model, one ratio per content kind

- ``prose``: text and thinking,
- ``code``: tool-call arguments and tool declarations (JSON),
- ``tool``: tool results,

from the provider-reported ``inputTokens`` of requests already sent:
``reported ~= r_prose * prose + r_code * code + r_tool * tool + fixed``
(``fixed``: per-message overhead and images, not scaled). The fit is
recursive least squares (a Kalman filter whose ratios drift a little each turn), so
memory is constant (three ratios and a 3x3 matrix per model), recent turns
weigh most, and a compaction that changes the mix is absorbed because each
kind has its own ratio. Until a model has been seen, every ratio is 1 (the
plain estimate). Ratios are kept within ``[0.25, 4]``.

The state is plain JSON (:meth:`TokenCalibration.to_json`, ``from_json``
drops what it cannot read), so a session can persist it as a custom entry
(:data:`CALIBRATION_ENTRY`) and a resumed session starts calibrated; with
``path=`` it is also kept in a file, rewritten after every turn it learns
from, so a new process starts calibrated for every provider/model it saw.

Given to an agent (``create_agent(token_calibration=...)``), the runtime
learns from every turn it sends and hands :meth:`TokenCalibration.scale`
to each budget decision: the attention gate, the compaction trigger, the
LLM compaction cut point and observational memory's thresholds.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prism import _native
from prism.errors import ConfigError

__all__ = [
    "CALIBRATION_ENTRY",
    "KINDS",
    "TokenCalibration",
    "TokenSplit",
    "model_key",
    "split_request_tokens",
]

CALIBRATION_ENTRY: Final = "prism.tokenCalibration"
KINDS: Final = ("prose", "code", "tool")
_MESSAGE_OVERHEAD = 4
_IMAGE_TOKENS = 1000
_MIN_RATIO, _MAX_RATIO = 0.25, 4.0
# The fit's constants (prior variance 100, drift 0.1 per turn: in steady
# state a turn moves the fit about a quarter of the way to what it saw,
# chosen on the benchmark's seed 7 fixture and checked on seed 11, see
# docs/performance.md) live with the update in prism_core::calibration.


@dataclass(frozen=True, slots=True)
class TokenSplit:
    """The plain estimate of one request, by content kind."""

    prose: int
    code: int
    tool: int
    fixed: int

    @property
    def total(self) -> int:
        return self.prose + self.code + self.tool + self.fixed


def _block_split(block: Mapping[str, Any]) -> tuple[int, int, int, int]:
    kind = block.get("type")
    if kind == "text" or kind == "thinking":
        text = block.get("text")
        return (_native.estimate_text_tokens(text) if isinstance(text, str) else 0), 0, 0, 0
    if kind == "tool_call":
        name = block.get("name") or ""
        return (
            0,
            _native.estimate_text_tokens(name)
            + _native.estimate_value_tokens(block.get("arguments")),
            0,
            0,
        )
    if kind == "tool_result":
        name = block.get("name") or ""
        return (
            0,
            0,
            _native.estimate_text_tokens(name) + _native.estimate_value_tokens(block.get("result")),
            0,
        )
    if kind == "image":
        return 0, 0, 0, _IMAGE_TOKENS
    return 0, _native.estimate_value_tokens(block), 0, 0


class _SplitMemo:
    """Per-message splits, keyed by object identity (the message is kept, so
    its id cannot be reused while cached). A session sends the same message
    objects turn after turn, so only new rows are measured."""

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._rows: OrderedDict[int, tuple[Any, tuple[int, int, int, int]]] = OrderedDict()

    def split(self, message: Any) -> tuple[int, int, int, int]:
        key = id(message)
        hit = self._rows.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        prose = code = tool = 0
        fixed = _MESSAGE_OVERHEAD
        for block in message.get("content") or ():
            if isinstance(block, Mapping):
                p, c, t, f = _block_split(block)
                prose, code, tool, fixed = prose + p, code + c, tool + t, fixed + f
        value = (prose, code, tool, fixed)
        self._rows[key] = (message, value)
        if len(self._rows) > self._size:
            self._rows.popitem(last=False)
        return value


_MEMO = _SplitMemo()

_Sums = tuple[int, int, int, int]


class _PrefixSplits:
    """Per session, the messages of its last split request and their running
    sums. A session's next request repeats the previous one's rows (the
    attention gate keeps them byte-identical between trips, see
    ``AttentionStickyFrontier.note_compiled``) and appends a few, so only the
    rows after the common prefix are split: the prefix is found by one C-level
    list comparison (identity first, equal content counts too) instead of a
    Python step per row."""

    def __init__(self, sessions: int = 64) -> None:
        self._limit = sessions
        self._last: OrderedDict[str, tuple[list[Any], list[_Sums]]] = OrderedDict()

    def total(self, session: str, messages: list[Any]) -> _Sums:
        cached = self._last.pop(session, None)
        sums: list[_Sums]
        start = 0
        if cached is None:
            sums = [(0, 0, 0, 0)]
        else:
            rows, sums = cached
            count = len(rows)
            if count <= len(messages) and messages[:count] == rows:
                start = count
            else:
                for old, new in zip(rows, messages, strict=False):
                    if old is not new and old != new:
                        break
                    start += 1
                del sums[start + 1 :]
        prose, code, tool, fixed = sums[start]
        split = _MEMO.split
        for message in messages[start:]:
            p, c, t, f = split(message)
            prose, code, tool, fixed = prose + p, code + c, tool + t, fixed + f
            sums.append((prose, code, tool, fixed))
        self._last[session] = (list(messages), sums)
        if len(self._last) > self._limit:
            self._last.popitem(last=False)
        return prose, code, tool, fixed


_PREFIXES = _PrefixSplits()


def split_request_tokens(request: Mapping[str, Any]) -> TokenSplit:
    """The plain (chars/4) estimate of a provider request, split by kind.

    A request whose ``metadata.sessionId`` is set reuses the running sums of
    that session's previous request over their common leading rows."""
    messages = request.get("messages") or ()
    session = (request.get("metadata") or {}).get("sessionId")
    if isinstance(session, str) and isinstance(messages, list):
        prose, code, tool, fixed = _PREFIXES.total(session, messages)
    else:
        prose = code = tool = fixed = 0
        for message in messages:
            p, c, t, f = _MEMO.split(message)
            prose, code, tool, fixed = prose + p, code + c, tool + t, fixed + f
    tools = request.get("tools")
    if tools:
        code += _native.estimate_value_tokens(tools)
    return TokenSplit(prose, code, tool, fixed)


# One model's fit: ratios ``r`` (prose, code, tool) and the symmetric 3x3
# covariance ``p`` as its upper triangle (p00, p01, p02, p11, p12, p22), with
# the turns learned from. The update (about sixty float operations) runs in
# the native core (prism_core::calibration): in Python it cost more than the
# 5 us per turn budget on its own.
_Model = _native.CalibrationFit


def _clamp(ratio: float) -> float:
    if ratio < _MIN_RATIO:
        return _MIN_RATIO
    return _MAX_RATIO if ratio > _MAX_RATIO else ratio


class TokenCalibration:
    """Per-model calibrated token estimates (see the module doc).

    ``observe(model, split, reported)`` after each turn; ``estimate(model,
    split)`` for the next budget decision. ``on_update`` (optional) is called
    with :meth:`snapshot` of the model after each observation.
    """

    def __init__(
        self,
        *,
        max_models: int = 32,
        on_update: Callable[[dict[str, Any]], None] | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._models: OrderedDict[str, _Model] = OrderedDict()
        self._max_models = max_models
        self._pending: dict[str, tuple[str, TokenSplit]] = {}
        # The last request's mix per model: the scale of the next decision.
        self._scales: dict[str, float] = {}
        self.on_update = on_update
        self.path = None if path is None else Path(path)
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _model(self, name: str) -> _Model:
        fit = self._models.get(name)
        if fit is None:
            fit = self._models[name] = _Model()
            if len(self._models) > self._max_models:
                self._models.popitem(last=False)
        else:
            self._models.move_to_end(name)
        return fit

    def observe(self, model: str, split: TokenSplit, reported: int) -> None:
        fit = self._model(model)
        prose, code, tool, fixed = split.prose, split.code, split.tool, split.fixed
        fit.observe(prose, code, tool, fixed, reported)
        total = prose + code + tool + fixed
        if total > 0:
            self._scales[model] = fit.estimate(prose, code, tool, fixed) / total
        if self.path is not None:
            self.save(self.path)
        if self.on_update is not None:
            self.on_update(self.snapshot(model))

    def scale(self, model: str) -> float:
        """Billed tokens per estimated token for ``model`` (``"provider/model"``,
        see :func:`model_key`) at the mix of its last observed request; 1.0
        before the first. Budget decisions multiply plain estimates by it
        (or divide their caps)."""
        scale = self._scales.get(model)
        if scale is None:
            fit = self._models.get(model)
            # Restored without a mix: the mean ratio is the best guess.
            scale = sum(fit.r) / 3 if fit is not None and fit.turns else 1.0
        return scale if math.isfinite(scale) and scale > 0 else 1.0

    def estimate(self, model: str, split: TokenSplit) -> int:
        fit = self._models.get(model)
        if fit is None:
            return split.total
        return fit.estimate(split.prose, split.code, split.tool, split.fixed)

    def estimate_request(self, request: Mapping[str, Any]) -> int:
        """The calibrated estimate of a provider request."""
        return self.estimate(_model_key(request), split_request_tokens(request))

    def ratios(self, model: str) -> dict[str, float]:
        fit = self._models.get(model)
        values = fit.r if fit is not None else (1.0, 1.0, 1.0)
        return dict(zip(KINDS, values, strict=True))

    def snapshot(self, model: str) -> dict[str, Any]:
        """``{"model", "turns", "ratios": {prose, code, tool}}`` (counts only, never text)."""
        fit = self._models.get(model)
        return {
            "model": model,
            "turns": fit.turns if fit is not None else 0,
            "ratios": {k: round(v, 4) for k, v in self.ratios(model).items()},
        }

    # -- wiring into a session through its public API ----------------------------

    async def provider_request_middleware(
        self, request: Any, call_next: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        """A ``provider_request`` middleware: remembers the split of the request
        as sent (after the attention gate and the middleware after this one),
        keyed by its session."""
        request = await call_next(request)
        metadata = request.get("metadata") or {}
        session = metadata.get("sessionId")
        if isinstance(session, str):
            self._pending[session] = (_model_key(request), split_request_tokens(request))
        return request

    def listener(self, event: Mapping[str, Any]) -> None:
        """A session listener: learns from each ``message_finished`` usage."""
        self._learn(event)

    def _learn(self, event: Mapping[str, Any]) -> tuple[str, TokenSplit] | None:
        if event.get("type") != "message_finished":
            return None
        usage = event.get("usage") or {}
        reported = usage.get("inputTokens")
        pending = self._pending.pop(str(event.get("sessionId")), None)
        if pending is None or not isinstance(reported, int) or isinstance(reported, bool):
            return None
        self.observe(pending[0], pending[1], reported)
        return pending

    async def attach(self, session: Any) -> Callable[[], None]:
        """Calibrate one session through its public API: models this
        calibration has not seen are restored from the session's latest
        :data:`CALIBRATION_ENTRY`, each turn's usage is learned, and the
        session's attention gate gets the calibrated scale (its cap is divided
        by billed-per-estimated tokens, so it trips where the provider's count
        is at the trigger). Register :meth:`provider_request_middleware` on the
        agent's middleware as well. Returns the unsubscribe function."""
        agent = getattr(session, "agent", None)
        config = getattr(agent, "config", None)
        if getattr(config, "token_calibration", None) is not None:
            raise ConfigError(
                f"session {getattr(session, 'id', '?')!r}: its agent already calibrates with "
                "token_calibration=, which learns every turn and restores from the session; "
                "attach() as well would learn each turn twice. Use one of the two."
            )
        self.adopt_unseen(TokenCalibration.from_entries(await session.branch_entries()))

        def listener(event: Mapping[str, Any]) -> None:
            learned = self._learn(event)
            frontier = session.attention_sticky
            if learned is None or frontier is None:
                return
            model, split = learned
            if split.total > 0:
                frontier.token_scale = self.estimate(model, split) / split.total

        return session.subscribe(listener)  # type: ignore[no-any-return]

    # -- persistence -----------------------------------------------------------

    def adopt_unseen(self, other: TokenCalibration) -> list[str]:
        """Take the fits of ``other``'s models this calibration has not seen
        (what it learned itself is newer); returns their names."""
        taken = [name for name in other._models if name not in self._models]
        for name in taken:
            self._models[name] = other._models[name]
            self._scales.pop(name, None)
        while len(self._models) > self._max_models:
            self._models.popitem(last=False)
        return taken

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "models": {
                name: {"r": list(fit.r), "p": list(fit.p), "turns": fit.turns}
                for name, fit in self._models.items()
            },
        }

    @classmethod
    def from_json(cls, data: Any, **kwargs: Any) -> TokenCalibration:
        """Restore; a malformed model entry is dropped, never fatal."""
        calibration = cls(**kwargs)
        models = data.get("models") if isinstance(data, Mapping) else None
        if not isinstance(models, Mapping):
            return calibration
        for name, raw in models.items():
            fit = _restore_model(raw)
            if isinstance(name, str) and fit is not None:
                calibration._models[name] = fit
        return calibration

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]], **kwargs: Any) -> TokenCalibration:
        """The latest :data:`CALIBRATION_ENTRY` custom entry of a branch."""
        latest: Any = None
        for entry in entries:
            if entry.get("kind") == "custom" and entry.get("customType") == CALIBRATION_ENTRY:
                latest = entry.get("data")
        return cls.from_json(latest, **kwargs)

    async def persist(self, session: Any) -> Any:
        """Append the state to ``session`` as a custom entry (its public API)."""
        return await session.append_custom(CALIBRATION_ENTRY, self.to_json())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state to ``path`` atomically (a temp file, then a rename,
        so a crash leaves the old file whole). A few hundred bytes per model:
        cheap enough to write from async code after each turn."""
        target = Path(path)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(self.to_json(), separators=(",", ":")), encoding="utf-8")
        os.replace(temp, target)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(
                f"token calibration file {str(path)!r} cannot be read ({type(exc).__name__}); "
                "fix or delete it"
            ) from None
        if not isinstance(data, Mapping) or data.get("version") != 1:
            raise ConfigError(
                f"token calibration file {str(path)!r} is not a version 1 calibration; "
                "fix or delete it"
            )
        for name, fit in TokenCalibration.from_json(data)._models.items():
            self._models[name] = fit


def _restore_model(raw: Any) -> _Model | None:
    if not isinstance(raw, Mapping):
        return None
    r, p, turns = raw.get("r"), raw.get("p"), raw.get("turns")
    numbers = (int, float)
    if (
        not isinstance(r, list)
        or len(r) != 3
        or not isinstance(p, list)
        or len(p) != 6
        or not all(isinstance(x, numbers) and not isinstance(x, bool) for x in [*r, *p])
        or not isinstance(turns, int)
    ):
        return None
    fit = _Model()
    fit.r = (_clamp(float(r[0])), _clamp(float(r[1])), _clamp(float(r[2])))
    fit.p = (float(p[0]), float(p[1]), float(p[2]), float(p[3]), float(p[4]), float(p[5]))
    fit.turns = max(0, turns)
    return fit


def model_key(model: Mapping[str, Any]) -> str:
    """The key a calibration learns under: ``"provider/model"``."""
    return f"{model.get('provider', '')}/{model.get('model', '')}"


def _model_key(request: Mapping[str, Any]) -> str:
    return model_key(request.get("model") or {})
