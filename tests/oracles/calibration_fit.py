"""Pure-Python reference of the token calibration's per-model fit
(``prism_core::calibration::Fit``, bound as ``prism._native.CalibrationFit``):
the update as it ran in Python before it moved to the native core."""

from __future__ import annotations

from typing import Any

_MIN_RATIO, _MAX_RATIO = 0.25, 4.0
_PRIOR_VARIANCE = 100.0
_DRIFT = 0.1
_DRIFT_CAP = _PRIOR_VARIANCE - _DRIFT


class OracleFit:
    """One model's fit: ratios ``r`` and the symmetric 3x3 covariance ``p``,
    stored as its upper triangle (p00, p01, p02, p11, p12, p22). Unrolled by
    hand: this runs once per turn and must cost a few microseconds."""

    __slots__ = ("p", "r", "turns")

    def __init__(self) -> None:
        v = _PRIOR_VARIANCE
        self.r = (1.0, 1.0, 1.0)
        self.p = (v, 0.0, 0.0, v, 0.0, v)
        self.turns = 0

    def observe(self, split: Any, reported: int) -> None:
        fixed = split.fixed
        scaled = split.prose + split.code + split.tool
        if scaled <= 0 or reported <= fixed:
            return
        # Fractions of the scaled part and the ratio it should have had:
        # well conditioned whatever the request size.
        inv = 1.0 / scaled
        u0, u1, u2 = split.prose * inv, split.code * inv, split.tool * inv
        target = (reported - fixed) * inv
        p00, p01, p02, p11, p12, p22 = self.p
        pu0 = p00 * u0 + p01 * u1 + p02 * u2
        pu1 = p01 * u0 + p11 * u1 + p12 * u2
        pu2 = p02 * u0 + p12 * u1 + p22 * u2
        gain = 1.0 / (1.0 + u0 * pu0 + u1 * pu1 + u2 * pu2)
        r0, r1, r2 = self.r
        step = (target - (r0 * u0 + r1 * u1 + r2 * u2)) * gain
        r0, r1, r2 = r0 + pu0 * step, r1 + pu1 * step, r2 + pu2 * step
        self.r = (_clamp(r0), _clamp(r1), _clamp(r2))
        # Kalman update, then the ratios' random walk: each turn adds _DRIFT
        # to their variance, so recent turns weigh most and the fit keeps
        # adapting. Directions the mix never moves along stop growing at the
        # prior (no wind-up, and no variance decays towards zero).
        q = _DRIFT
        p00 = p00 - pu0 * pu0 * gain
        p01 = p01 - pu0 * pu1 * gain
        p02 = p02 - pu0 * pu2 * gain
        p11 = p11 - pu1 * pu1 * gain
        p12 = p12 - pu1 * pu2 * gain
        p22 = p22 - pu2 * pu2 * gain
        if p00 < _DRIFT_CAP:
            p00 += q
        if p11 < _DRIFT_CAP:
            p11 += q
        if p22 < _DRIFT_CAP:
            p22 += q
        self.p = (p00, p01, p02, p11, p12, p22)
        self.turns += 1

    def estimate(self, split: Any) -> int:
        r0, r1, r2 = self.r
        return round(r0 * split.prose + r1 * split.code + r2 * split.tool) + split.fixed


def _clamp(ratio: float) -> float:
    if ratio < _MIN_RATIO:
        return _MIN_RATIO
    return _MAX_RATIO if ratio > _MAX_RATIO else ratio
