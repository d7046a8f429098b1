"""The runtime's token-calibration hook.

An agent built with ``token_calibration=`` learns, after every provider turn,
how many input tokens the provider billed for the request as sent, and emits
one ``tokens_calibrated`` event. :func:`token_scale` is what the budget
decisions read: the attention gate (its frontier's ``token_scale``), the
``input_ratio`` compaction trigger, and the strategies through
``CompactionContext.token_scale`` (the LLM cut point, observational
memory's thresholds).

The state persists with the session (``prism.attention.calibration_entry``):
:func:`restore_calibration` runs when a run begins and seeds the agent's
calibration from the branch's newest record, and a turn whose fit moved
leaves a record in ``RunProgress.calibration`` for the turn's write
(:func:`calibration_entries`, or a durable checkpoint's field).

A turn is learned once: the loop calls :func:`learn_from_turn` inside the
recorded provider-turn step, so an engine replaying the run from its record
does not learn it again, and a replay that runs the step again (a journal
that records nothing) finds its ``(run, message)`` id already learned.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from prism.attention.calibration import (
    CALIBRATION_ENTRY,
    TokenCalibration,
    model_key,
    split_request_tokens,
)
from prism.attention.calibration_entry import (
    calibration_record,
    is_material,
    read_calibration_record,
    record_error,
    record_of_entry,
    turn_error,
)
from prism.contracts import ProviderRequest, SessionEntry, Usage
from prism.runtime.context import AttentionState, RunPort, RunSettings

__all__ = [
    "calibration_entries",
    "calibration_stored",
    "learn_from_turn",
    "restore_calibration",
    "token_scale",
]

_LEARNED_TURNS = 512
# Per calibration, the (run id, message id) of the turns it learned lately.
_learned: weakref.WeakKeyDictionary[TokenCalibration, OrderedDict[tuple[str, str], None]] = (
    weakref.WeakKeyDictionary()
)


def token_scale(settings: RunSettings, model: Mapping[str, Any]) -> float:
    """Billed per estimated tokens for ``model``; 1.0 without a calibration."""
    calibration = settings.config.token_calibration
    return 1.0 if calibration is None else calibration.scale(model_key(model))


def restore_calibration(settings: RunSettings, port: RunPort) -> None:
    """Seed the agent's calibration from the branch's newest record (models
    it has not seen this process; what it learned itself is newer). A
    damaged record is one ``calibration_warning`` event and is otherwise
    ignored: the run goes on with what the calibration holds."""
    calibration = settings.config.token_calibration
    entry = port.branch.last_calibration
    state = port.attention_state
    if calibration is None or entry is None or entry["id"] == state.calibration_seen:
        return
    state.calibration_seen = entry["id"]
    restored, problem = read_calibration_record(record_of_entry(entry))
    if problem is not None:
        port.emit(
            {
                "type": "calibration_warning",
                "entryId": entry["id"],
                "message": (
                    f"session {port.session_id!r}: token calibration record in entry "
                    f"{entry['id']!r} is damaged ({problem}); the run goes on without it"
                ),
            }
        )
    state.calibration_marks = {}
    _mark(state, restored, record_of_entry(entry))
    calibration.adopt_unseen(restored)


def _mark(state: AttentionState, restored: TokenCalibration, record: Any) -> None:
    for model, fit in restored.to_json()["models"].items():
        error = record_error(record, model)
        state.calibration_marks[model] = (restored.ratios(model), fit["turns"], error)


def learn_from_turn(
    settings: RunSettings,
    port: RunPort,
    request: ProviderRequest,
    usage: Usage,
    message_id: str,
) -> dict[str, Any] | None:
    """Teach the agent's calibration one completed turn (a turn without
    reported input tokens, or one already learned, teaches nothing) and pass
    the new scale on. Returns the record to persist when the fit moved."""
    calibration = settings.config.token_calibration
    reported = usage.get("inputTokens") if usage else None
    if calibration is None or not isinstance(reported, int) or isinstance(reported, bool):
        return None
    learned = _learned.setdefault(calibration, OrderedDict())
    turn = (str(port.run_id), message_id)
    if turn in learned:
        return None
    learned[turn] = None
    if len(learned) > _LEARNED_TURNS:
        learned.popitem(last=False)
    key = model_key(request["model"])
    split = split_request_tokens(request)
    calibrated = calibration.estimate(key, split)
    calibration.observe(key, split, reported)
    scale = calibration.scale(key)
    frontier = port.frontier
    if frontier is not None:
        frontier.token_scale = scale
    snapshot = calibration.snapshot(key)
    port.emit(
        {
            "type": "tokens_calibrated",
            "model": key,
            "turns": snapshot["turns"],
            "ratios": snapshot["ratios"],
            "scale": round(scale, 4),
            "estimatedTokens": split.total,
            "calibratedTokens": calibrated,
            "reportedTokens": reported,
        }
    )
    mark = port.attention_state.calibration_marks.get(key)
    error = turn_error(calibrated, reported)
    if mark is not None:
        turns_since = snapshot["turns"] - mark[1]
        error_moved = error - mark[2] if mark[2] is not None else 1.0
        if not is_material(mark[0], calibration.ratios(key), turns_since, error_moved):
            return None
    return calibration_record(
        calibration, key, estimated=split.total, calibrated=calibrated, reported=reported
    )


def calibration_entries(port: RunPort, record: dict[str, Any] | None) -> list[SessionEntry]:
    """A plain run's calibration ``custom`` entry for its next batch."""
    if record is None:
        return []
    entry = {
        "id": port.new_entry_id(),
        "sessionId": port.session_id,
        "parentId": None,
        "kind": "custom",
        "customType": CALIBRATION_ENTRY,
        "data": record,
    }
    return [entry]  # type: ignore[list-item]


def calibration_stored(state: AttentionState, entry_id: str, record: Mapping[str, Any]) -> None:
    """The session's newest record is now ``record`` (in entry ``entry_id``)."""
    state.calibration_seen = entry_id
    _mark(state, TokenCalibration.from_json(record), record)
