"""The token calibration as part of a session (docs/attention.md).

An agent with ``token_calibration=`` writes what it learned into the
session it learned in, so opening the session in another process (any
store) starts calibrated without a host-named file. The record is the
:meth:`TokenCalibration.to_json` shape for the models the turn used, plus
``last`` (per model: the scale, and the turn's plain estimate, calibrated
estimate and billed input tokens: counts only)::

    {"version": 1,
     "models": {"provider/model": {"r": [...], "p": [...], "turns": n}},
     "last": {"provider/model": {"scale": s, "estimatedTokens": e,
                                 "calibratedTokens": c, "reportedTokens": b}}}

It rides in an existing write: a plain run appends it as a ``custom`` entry
(``customType`` :data:`CALIBRATION_ENTRY`) in the batch of the turn that
learned it; a durable run puts it in that turn's checkpoint
(``data.tokenCalibration``), so a replaying engine sees the same chain of
entries whatever the calibration decided. It is written only when the fit
moved materially since the session's last record (or every
:data:`REWRITE_EVERY` turns), so a converged session writes almost nothing.
The newest record on the branch is the session's state: a fork or a
navigation inherits the record at its fork point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from prism.attention.calibration import CALIBRATION_ENTRY, KINDS, TokenCalibration

__all__ = [
    "CHECKPOINT_FIELD",
    "MATERIAL_CHANGE",
    "REWRITE_EVERY",
    "calibration_record",
    "calibration_rows",
    "is_material",
    "read_calibration_record",
    "record_error",
    "record_of_entry",
    "turn_error",
]

CHECKPOINT_FIELD: Final = "tokenCalibration"
MATERIAL_CHANGE: Final = 0.02
"""A ratio that moved by this fraction since the session's last record is written."""
REWRITE_EVERY: Final = 20
"""Turns learned after which a record is written even when no ratio moved."""
_CHECKPOINT = "prism.checkpoint"


def record_of_entry(entry: Mapping[str, Any]) -> Any:
    """The calibration record an entry carries (a calibration ``custom``
    entry's ``data``, or a checkpoint's ``data.tokenCalibration``), else
    None. Not validated: see :func:`read_calibration_record`."""
    if entry.get("kind") != "custom":
        return None
    kind = entry.get("customType")
    data = entry.get("data")
    if kind == CALIBRATION_ENTRY:
        return data if data is not None else {}
    if kind == _CHECKPOINT and isinstance(data, Mapping):
        return data.get(CHECKPOINT_FIELD)
    return None


def calibration_record(
    calibration: TokenCalibration,
    model: str,
    *,
    estimated: int,
    calibrated: int,
    reported: int,
) -> dict[str, Any]:
    """The record of ``model``'s fit after a turn (counts only)."""
    fit = calibration.to_json()["models"].get(model)
    return {
        "version": 1,
        "models": {} if fit is None else {model: fit},
        "last": {
            model: {
                "scale": round(calibration.scale(model), 4),
                "estimatedTokens": estimated,
                "calibratedTokens": calibrated,
                "reportedTokens": reported,
            }
        },
    }


def record_error(data: Any, model: str) -> float | None:
    """The error of the last turn a record holds for ``model``, if any."""
    last = data.get("last") if isinstance(data, Mapping) else None
    figures = last.get(model) if isinstance(last, Mapping) else None
    if not isinstance(figures, Mapping):
        return None
    calibrated, reported = figures.get("calibratedTokens"), figures.get("reportedTokens")
    if isinstance(calibrated, int) and isinstance(reported, int):
        return turn_error(calibrated, reported)
    return None


def read_calibration_record(data: Any) -> tuple[TokenCalibration, str | None]:
    """The calibration a record holds, and what was wrong with it (None when
    whole). A damaged record yields what could be read (possibly nothing)."""
    if not isinstance(data, Mapping):
        return TokenCalibration(), f"expected an object, got {type(data).__name__}"
    if data.get("version") != 1:
        return TokenCalibration(), f"version {data.get('version')!r} is not 1"
    models = data.get("models")
    if not isinstance(models, Mapping):
        return TokenCalibration(), "'models' is not an object"
    restored = TokenCalibration.from_json(data)
    known = set(restored.to_json()["models"])
    damaged = sorted(str(name) for name in models if name not in known)
    if damaged:
        return restored, f"model(s) {', '.join(map(repr, damaged))} malformed; dropped"
    return restored, None


def turn_error(calibrated: int, reported: int) -> float:
    """The calibrated estimate's error against the bill, as a fraction of the bill."""
    return (calibrated - reported) / reported if reported > 0 else 0.0


def is_material(
    before: Mapping[str, float] | None,
    after: Mapping[str, float],
    turns_since: int,
    error_moved: float = 0.0,
) -> bool:
    """Whether a fit moved enough since the session's last record to write
    another: a ratio by :data:`MATERIAL_CHANGE` of itself, the last turn's
    error by :data:`MATERIAL_CHANGE` * 2.5 of the bill (so the record's
    error figure stays honest once the fit settles), or
    :data:`REWRITE_EVERY` turns learned."""
    if before is None or turns_since >= REWRITE_EVERY:
        return True
    if abs(error_moved) > MATERIAL_CHANGE * 2.5:
        return True
    for kind in KINDS:
        old, new = before.get(kind, 1.0), after.get(kind, 1.0)
        if abs(new - old) > MATERIAL_CHANGE * max(abs(old), 1e-9):
            return True
    return False


def calibration_rows(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model, what the newest record on a branch (root first) says:
    ``model``, ``turns`` (samples seen), ``ratios`` by kind, ``scale``, the
    last turn's ``estimatedTokens``/``calibratedTokens``/``reportedTokens``
    and ``lastError`` (calibrated estimate minus billed, over billed),
    ``entryId`` of the record; a damaged record is listed with ``problem``."""
    rows: dict[str, dict[str, Any]] = {}
    for entry in entries:
        data = record_of_entry(entry)
        if data is None:
            continue
        restored, problem = read_calibration_record(data)
        if problem is not None:
            rows[f"!{entry.get('id')}"] = {"entryId": entry.get("id"), "problem": problem}
        last = data.get("last") if isinstance(data, Mapping) else None
        for model, fit in restored.to_json()["models"].items():
            row: dict[str, Any] = {
                "model": model,
                "turns": fit["turns"],
                "ratios": {k: round(v, 4) for k, v in restored.ratios(model).items()},
                "scale": round(restored.scale(model), 4),
                "entryId": entry.get("id"),
            }
            figures = last.get(model) if isinstance(last, Mapping) else None
            if isinstance(figures, Mapping):
                row.update(_last_figures(figures))
            rows[model] = row
    return list(rows.values())


def _last_figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("scale", "estimatedTokens", "calibratedTokens", "reportedTokens"):
        value = figures.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = value
    billed, calibrated = out.get("reportedTokens"), out.get("calibratedTokens")
    if billed and calibrated is not None:
        out["lastError"] = round(turn_error(calibrated, billed), 4)
    return out
