"""The native calibration fit (prism._native.CalibrationFit) against the
pure-Python reference it replaced (tests/oracles/calibration_fit.py): the
same ratios, covariance, turns and estimates after any sequence of turns."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles.calibration_fit import OracleFit

from prism import _native
from prism.attention.calibration import TokenCalibration, TokenSplit

counts = st.integers(min_value=0, max_value=2_000_000)
turns = st.lists(
    st.tuples(counts, counts, counts, st.integers(0, 5000), st.integers(-10, 4_000_000)),
    min_size=1,
    max_size=40,
)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=150, deadline=None)
@given(turns)
def test_native_fit_matches_the_reference(sequence: list[tuple[int, int, int, int, int]]) -> None:
    native, oracle = _native.CalibrationFit(), OracleFit()
    for prose, code, tool, fixed, reported in sequence:
        split = TokenSplit(prose, code, tool, fixed)
        assert native.estimate(prose, code, tool, fixed) == oracle.estimate(split)
        native.observe(prose, code, tool, fixed, reported)
        oracle.observe(split, reported)
        assert native.turns == oracle.turns
        assert all(close(a, b) for a, b in zip(native.r, oracle.r, strict=True))
        assert all(close(a, b) for a, b in zip(native.p, oracle.p, strict=True))


def test_state_round_trips_through_json_unchanged() -> None:
    calibration = TokenCalibration()
    for n in range(5):
        calibration.observe("p/m", TokenSplit(300 + n, 500, 200, 10), 1210 + 7 * n)
    data = calibration.to_json()
    assert set(data["models"]["p/m"]) == {"r", "p", "turns"}
    assert len(data["models"]["p/m"]["r"]) == 3 and len(data["models"]["p/m"]["p"]) == 6
    restored = TokenCalibration.from_json(data)
    assert restored.to_json() == data
    split = TokenSplit(400, 100, 900, 12)
    assert restored.estimate("p/m", split) == calibration.estimate("p/m", split)
