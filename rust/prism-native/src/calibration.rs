//! Binding of the token calibration's per-model fit (`prism_core::calibration`):
//! a small mutable object that `prism.attention.calibration` keeps per model.
//! Sub-microsecond work, so the GIL is kept.
use prism_core::calibration::{clamp_ratio, Fit};
use pyo3::prelude::*;

/// One model's fit: ratios `r` (prose, code, tool), the covariance's upper
/// triangle `p`, and the number of turns learned from.
#[pyclass(module = "prism._native")]
#[derive(Default)]
pub struct CalibrationFit {
    fit: Fit,
}

#[pymethods]
impl CalibrationFit {
    #[new]
    fn new() -> Self {
        CalibrationFit::default()
    }

    /// Learn one request; false when it carries nothing to learn from.
    fn observe(&mut self, prose: i64, code: i64, tool: i64, fixed: i64, reported: i64) -> bool {
        self.fit.observe([prose, code, tool], fixed, reported)
    }

    /// The calibrated estimate of a request split.
    fn estimate(&self, prose: i64, code: i64, tool: i64, fixed: i64) -> i64 {
        self.fit.estimate([prose, code, tool], fixed)
    }

    #[getter]
    fn r(&self) -> (f64, f64, f64) {
        let [a, b, c] = self.fit.r;
        (a, b, c)
    }

    /// Ratios are clamped to the fit's bounds.
    #[setter]
    fn set_r(&mut self, r: (f64, f64, f64)) {
        self.fit.r = [r.0, r.1, r.2].map(clamp_ratio);
    }

    #[getter]
    fn p(&self) -> (f64, f64, f64, f64, f64, f64) {
        let [a, b, c, d, e, f] = self.fit.p;
        (a, b, c, d, e, f)
    }

    #[setter]
    fn set_p(&mut self, p: (f64, f64, f64, f64, f64, f64)) {
        self.fit.p = [p.0, p.1, p.2, p.3, p.4, p.5];
    }

    #[getter]
    fn turns(&self) -> u64 {
        self.fit.turns
    }

    #[setter]
    fn set_turns(&mut self, turns: u64) {
        self.fit.turns = turns;
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CalibrationFit>()
}
